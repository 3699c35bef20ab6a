// The timing model: each phase of docs/spec.md 1.1 from its bytes/FLOPs and the profile's rates (docs/model.md).
// Times in us, bytes in B, rates in GB/s (1 GB/s = 1e3 B/us).
#include "model/model.hpp"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <sstream>

#include "common/errors.hpp"

namespace gemmar::model {
namespace {

double us_at(double bytes, double gbps) { return bytes / (gbps * 1e3); }

struct Ctx {
  const Params& p;
  Shape s;
  Config c;
  double W, S, N, K, Mp;
  double share;  // ranks whose work lands on one device: 1, or W when emulated on one device

  Ctx(const Params& pp, const Shape& sh, const Config& cf) : p(pp), s(sh), c(cf) {
    W = s.world;
    // The run's row plan: M padded to W x BLOCK_M, or the wo_b profile's padding, or relaxed rows (M as given, a
    // multiple of W only: the last band of a slice is short and a tile may straddle two owners).
    Mp = double(padded_m(s, c));
    S = Mp / W;
    N = double(s.n);
    K = double(s.k);
    share = p.one_device ? W : 1.0;
  }

  // Per-rank effective rates: on one device every rank's traffic shares the device's rate.
  double link_peak_raw() const {  // datasheet, no efficiency: for the lower bound
    if (p.link.medium == Medium::Hbm) return p.hbm.peak_gbps / 2.0 / share;  // a local copy reads and writes
    return links() * p.link.gbps_per_direction;
  }
  double links() const { return p.link.links_used(W); }
  double sdma_rate() const {  // copy-engine puts
    if (p.link.medium == Medium::Hbm) return p.copy_engine.d2d_gbps / share;
    // the engines of all W - 1 links share one ceiling (copy_engine.aggregate_gbps; absent: none)
    return std::min(p.copy_engine.aggregate_gbps, links() * p.link.gbps_per_direction * p.link.protocol_efficiency);
  }
  double cu_rate() const {  // CU loads/stores to peer memory, once enough requests are in flight
    if (p.link.medium == Medium::Hbm) return p.hbm.copy_gbps / share;
    return links() * p.link.gbps_per_direction * p.link.protocol_efficiency;
  }
  double pull_cap() const {
    if (p.link.medium == Medium::Hbm) return cu_rate();
    return p.link.links * p.link.gbps_per_direction * p.link.protocol_efficiency;
  }
  double hbm_rate() const { return p.hbm.peak_gbps * p.hbm.efficiency / share; }
  double hbm_peak() const { return p.hbm.peak_gbps / share; }

  // The quant's K loop against the base quant's (the profile's gemm.efficiency_ratio.QUANT; a quant it does not
  // list runs at the base's rate, and predict() says so).
  double quant_eff() const { return p.gemm.achieved_efficiency * p.gemm.ratio(c.quant); }
  // One tile's K loop at the achieved MFMA rate.
  double k_loop_us() const {
    const double bm = block_m(c.quant), bn = p.gemm.tile_n;
    const double per_cu_flops_per_us = p.gemm.fp8_tflops_dense * 1e6 / p.gemm.compute_units;
    return 2.0 * bm * bn * K / (per_cu_flops_per_us * quant_eff());
  }
  double tile_us() const { return p.gemm.tile_epilogue_us + k_loop_us(); }
  double tiles() const { return std::ceil(Mp / block_m(c.quant)) * std::ceil(N / p.gemm.tile_n); }
  // Tiles in waves of compute_units: the full waves at the whole tile time; a last wave of a fraction f of the
  // CUs keeps its MFMA part and its tile epilogue (one CU's C store and first loads: latency, not shared
  // bandwidth), but the memory part of its K loop runs f times as contended (docs/model.md "GEMM").
  double waves() const { return std::ceil(tiles() / p.gemm.compute_units); }
  double gemm_waves_us() const { return waves_us(tiles()); }
  // `n_tiles` tiles in waves of compute_units (one GEMM's tiles, or on one device the W ranks' tiles together).
  double waves_us(double n_tiles) const {
    const double waves = n_tiles / p.gemm.compute_units;
    const double full = std::floor(waves), f = waves - full;
    const double c_frac = p.gemm.partial_wave_compute_fraction;
    const double last = f > 0 ? p.gemm.tile_epilogue_us + k_loop_us() * (c_frac + (1 - c_frac) * f) : 0.0;
    return full * tile_us() + last;
  }
  // The GEMM's fixed cost proportional to K: the K loop that no other wave hides (the first wave's fill, the last
  // one's drain), per BLOCK_K; mori's sweep_dsv41.jsonl gives 24.0 us at K = 2048 and 12.1 us at K = 1024 for its
  // whole-wave points (docs/model.md "GEMM fixed cost proportional to K").
  double gemm_fill_us() const { return std::ceil(K / p.gemm.block_k) * p.gemm.k_iter_latency_us; }
  // One GEMM per device: its launch, the K-proportional fill, its tile waves.
  // One device (share = W ranks): the backend launches the W ranks' GEMMs on W streams at once
  // (kernels/pipeline/legs_gemm.cu, each rank's compute stream), each a persistent kernel of min(tiles, compute_units)
  // CTAs of one whole SM each (~200 KB of shared memory), so the kernels share no SM during their main waves, but a
  // kernel's CTAs start on the SMs that the previous one's last partial wave leaves free: the W x tiles tiles pack into
  // waves of compute_units, ceil(W tiles / CUs) waves instead of W ceil(tiles / CUs). The W launches overlap (one
  // launch_us) and the fill is the first kernel's only (a later kernel's CTAs start under the earlier kernels'
  // waves). The W GEMMs' C stores bound it from below at the copy ceiling, as they bound the phase's lower bound
  // at the HBM peak (docs/model.md "One device: W concurrent GEMMs").
  // Never faster than its C stores at the copy ceiling: they bind where K is small (below ~290 on an H200, the
  // fp8 FLOPs per byte of C at these rates), where the K loop alone predicted less than the lower bound's C at
  // HBM peak (gemmar model exited 3 at K = 128 on h200).
  double gemm_only_us() const {
    const double k_work = p.one_device ? waves_us(share * tiles()) : gemm_waves_us();
    return p.gemm.launch_us + gemm_fill_us() + std::max(k_work, gemm_c_store_us());
  }
  // The device's C stores of the phase at the copy ceiling (one device: all W ranks' C through one HBM).
  double gemm_c_store_us() const { return us_at(Mp * N * 2, hbm_rate()); }
  // The share of a split mode's re-read of C that misses the last-level cache: what was touched between C's first
  // store and its re-read (the rest of C, A and B; the previous call's output was written before and goes first
  // from a least-recently-used cache) beyond the cache's capacity (docs/model.md "cache").
  double c_miss_fraction() const {
    if (p.cache.capacity_mb <= 0 || p.one_device) return 0.0;
    const double live = Mp * N * 2 + Mp * K + N * K;
    return std::max(0.0, live - p.cache.capacity_mb * 1e6) / live;
  }
  double c_read_slowdown() const { return 1.0 + c_miss_fraction() * p.cache.miss_slowdown; }
  double gemm_flops() const { return 2.0 * Mp * N * K; }
  // When each row block of BLOCK_M rows (all its N tiles) is done, rank 0's rotated tile order: blocks sorted by
  // the band their first row is in within its owner's slice, then by owner; tiles leave in waves of compute_units,
  // a wave every wave_us after t_start; the block holding the GEMM's last tile is done at gemm_end.
  std::vector<double> row_block_done(double t_start, double wave_us, double gemm_end) const {
    const double bm = block_m(c.quant);
    const auto blocks = std::size_t(std::ceil(Mp / bm));
    const double n_tiles = std::ceil(N / p.gemm.tile_n);
    std::vector<std::pair<std::pair<int64_t, int64_t>, std::size_t>> order;
    for (std::size_t b = 0; b < blocks; ++b) {
      const double row = double(b) * bm;
      const auto owner = std::min(int64_t(W) - 1, int64_t(row / S));
      order.push_back({{int64_t((row - double(owner) * S) / bm), owner}, b});
    }
    std::sort(order.begin(), order.end());
    std::vector<double> done(blocks);
    for (std::size_t i = 0; i < blocks; ++i) {
      const double last_tile = double(i + 1) * n_tiles - 1;
      done[order[i].second] =
          i + 1 == blocks ? gemm_end
                          : std::min(gemm_end, t_start + (std::floor(last_tile / p.gemm.compute_units) + 1) * wave_us);
    }
    return done;
  }
  double relaxed_tile_us() const {
    GEMMAR_USAGE_CHECK(std::isfinite(p.gemm.relaxed_tile_us),
                       "--relaxed-rows: the profile has no gemm.relaxed_tile_us, so it cannot model the epilogue's "
                       "per-segment counts");
    return p.gemm.relaxed_tile_us;
  }
  // fp8 scatter, per tile: the block re-reads its bf16 C tile and writes the e4m3 codes and one fp32 scale per row
  // and 256 columns, at one CU's rate for its own epilogue traffic (gemm.epilogue_cu_gbps).
  double scatter_quantize_tile_us() const {
    GEMMAR_USAGE_CHECK(std::isfinite(p.gemm.epilogue_cu_gbps),
                       "--scatter-dtype fp8: the profile has no gemm.epilogue_cu_gbps, so it cannot model the "
                       "epilogue's quantize of the scatter leg");
    const double bm = block_m(c.quant), bn = p.gemm.tile_n;
    return us_at(bm * bn * 2 + bm * bn + bm * std::ceil(bn / 256) * 4, p.gemm.epilogue_cu_gbps);
  }
};

Phase phase(std::string name, double us, double bytes, std::string bound) {
  Phase ph;
  ph.name = std::move(name);
  ph.us = us;
  ph.bytes = bytes;
  ph.bound = std::move(bound);
  return ph;
}

// Little's law for the CU pull, with thrash beyond the bandwidth-delay product (docs/model.md "pull").
struct PullRate {
  double gbps;
  bool latency_bound;
};
PullRate pull_rate(const Ctx& x, int blocks) {
  const auto& p = x.p;
  // The pull keeps the whole mesh's links (not W - 1): its latency and thrash terms are calibrated at W = 8 only,
  // and W - 1 links would move its grid optimum at W < 8 on no measurement (docs/model.md "Where the model is
  // weakest").
  const double cap = x.pull_cap() * x.share;                                       // device GB/s
  const double outstanding = x.share * blocks * p.pull.bytes_in_flight_per_block;  // B
  const double little = outstanding / p.pull.remote_latency_us / 1e3;              // GB/s
  const double bdp = cap * 1e3 * p.pull.remote_latency_us;                         // B
  const double thrash = 1.0 + p.pull.contention_k * std::max(0.0, outstanding / bdp - 1.0);
  return {std::min(cap, little) / thrash / x.share, little < cap};
}

// One method per leg of the pipeline; each appends its phases and adds its lower-bound term.
struct PredictionBuilder {
  PredictionBuilder(const Ctx& ctx, const Config& c)
      : x(ctx),
        p(ctx.p),
        cfg(c),
        L(p.sync.kernel_launch_us * ctx.share),
        W(ctx.W),
        S(ctx.S),
        N(ctx.N),
        slice_bf16(S * N * 2),
        c_bytes(ctx.Mp * N * 2),
        fp8_scatter(c.scatter_dtype == WireDtype::Fp8),
        scatter_bytes(fp8_scatter ? (W - 1) * fp8_scatter_slice_bytes() : (W - 1) * slice_bf16),
        fp8(uses_fp8_wire(c)),
        lsa_gather(c.gather_transport == Transport::Lsa) {}
  const Ctx& x;
  const Params& p;
  const Config& cfg;
  const double L;  // every emulated rank launches its own kernel
  const double W, S, N, slice_bf16, c_bytes;
  // The scatter leg: bf16 partials, or (fp8 scatter) e4m3 codes with one fp32 scale per row and 256 columns
  // (mori kernels_fused.py @f3bff0ae, the fp8_scatter epilogue; layout.py scatter_scale_n = 256).
  const bool fp8_scatter;
  const double scatter_bytes;
  const bool fp8, lsa_gather;
  static constexpr double kScatterScaleN = 256;
  double fp8_scatter_slice_bytes() const { return S * N + S * std::ceil(N / kScatterScaleN) * 4; }
  Prediction pr;
  double lb = 0;  // sum over sequential phases of the time at peak rates

  // The scatter leg by copy-engine puts after the whole GEMM (split-sdma's, and fused-sdma's drain on one device),
  // without its barrier: one put's fixed cost and the bytes at the put rate, slowed where C is read from HBM.
  double copy_engine_scatter_us() const {
    return p.copy_engine.per_put_us +
           us_at(scatter_bytes, x.sdma_rate() * p.link.scatter_efficiency) * x.c_read_slowdown();
  }

  // gemm, and the scatter leg: in the epilogue (fused, then a drain) or by copy-engine puts (split-sdma).
  void gemm_and_scatter() {
    // --- gemm (+ scatter leg)
    const double gemm_only = x.gemm_only_us();
    // The W GEMMs' FLOPs at the vendor rate, their tiles sharing the device's SMs (no wave quantization); on one
    // device also no faster than their C stores at the copy ceiling, so never below the lower bound.
    const double gemm_flops_us = x.share * x.gemm_flops() / (p.gemm.fp8_tflops_dense * 1e6);
    const double gemm_ceiling = std::max(gemm_flops_us, x.gemm_c_store_us());
    const double gemm_lb =
        std::max(x.share * x.gemm_flops() / (p.gemm.peak_tflops_dense * 1e6), us_at(c_bytes, x.hbm_peak()));
    const ModeTraits& mt = traits(cfg.mode);
    // The GEMM phase: its FLOPs, its C through HBM, its scatter bytes where the epilogue pushes them.
    const auto gemm_phase = [&](double us, const char* bound, double link_bytes) {
      Phase g = phase("gemm", us, c_bytes, bound);
      g.flops = x.gemm_flops();
      g.link_bytes = link_bytes;
      g.hbm_bytes = c_bytes;
      g.ceiling_us = gemm_ceiling;
      pr.phases.push_back(g);
    };
    if (!mt.collective) {
      gemm_phase(gemm_only, "compute", 0.0);
      lb += (pr.phases.back().lower_bound_us = gemm_lb);
      if (p.one_device) {
        // The one-device backend hands back each rank's partial as its output: W copy-engine copies of C,
        // inside the timed region (kernels/pipeline/legs_gemm.cu), so the standalone total carries them.
        Phase o = phase("output", us_at(c_bytes, x.sdma_rate()), c_bytes, "hbm");
        o.hbm_bytes = 2 * c_bytes;
        o.ceiling_us = us_at(c_bytes, x.sdma_rate());
        pr.phases.push_back(o);
        lb += (pr.phases.back().lower_bound_us = us_at(c_bytes, x.link_peak_raw()));
      }
    } else if (mt.fused) {
      const bool sdma = mt.scatter_by_copy_engine;
      // One device, fused-lsa: the epilogue's stores into the owners' slots are the C write itself (same
      // HBM, same bytes), so no push tail exists.
      const bool stores_are_c = p.one_device && !sdma;
      // fp8 scatter: after a tile's bf16 stores, its block re-reads the tile, takes each row's amax over 256
      // columns and writes e4m3 codes and scales (kernels_fused.py @f3bff0ae, `if const_expr(fp8_scatter)`): a
      // cost per tile, paid by every wave.
      // Relaxed rows: a tile may straddle two owners and two chunks, and its epilogue counts every (owner, chunk)
      // segment it intersects (kernels_fused.py @f3bff0ae: "completion counters count tile/segment
      // intersections"), a device-scope atomic each: gemm.relaxed_tile_us more per tile, paid by every wave.
      const double quantize_tile_us =
          (fp8_scatter ? x.scatter_quantize_tile_us() : 0.0) + (cfg.relaxed_rows && sdma ? x.relaxed_tile_us() : 0.0);
      // The fused epilogue's tail (kernels_fused.py @f3bff0ae, after the block's store_c: wait_barrier(0), thread 0's
      // counter atomic, the elected put) runs once per tile, after its K loop, so it slows the tile waves, not the
      // launch or the K-proportional fill that precedes the first wave's first tile.
      const double gemm_waves_work = gemm_only - p.gemm.launch_us - x.gemm_fill_us();
      double gemm_f = stores_are_c
                          ? gemm_only
                          : gemm_only + gemm_waves_work * p.gemm.epilogue_slowdown + x.waves() * quantize_tile_us;
      // Pushes start when the first wave of tiles is done (after the launch and the K-proportional fill; on one
      // device the W ranks' GEMMs start at once, so one launch and one fill).
      const double wave_us = x.tile_us() * (1.0 + p.gemm.epilogue_slowdown) + quantize_tile_us;
      const double t_start = p.gemm.launch_us + x.gemm_fill_us();
      // The scatter leg's rate: copy-engine puts, or (fused-lsa) the epilogue's CU stores into the peers' slots.
      const double wire_rate =
          sdma ? x.sdma_rate() * p.link.scatter_efficiency : x.cu_rate() * p.link.remote_store_efficiency;
      // fused-sdma over a link follows mori's chunk protocol (bench_gemm_ar.py @fc892894, "Pushes per
      // destination. This is the whole overlap mechanism"): each destination's slice leaves in the chunk plan's
      // puts (common/config.hpp chunk_plan: the bench's or the op's chunk rule, or --chunk-bands' bands per put
      // with a short last one), and under the rotated tile order every wave works on every destination's rows,
      // so chunk c of every destination is done with the wave that holds the last tile of its bands, at
      // (first band + bands of c) / bands of the tiles. One chunk waits for the whole GEMM ("with one chunk the
      // fused path overlaps nothing at all": its drain is the split scatter). An fp8 scatter puts its scales
      // after each payload (a second put). fused-sdma on one device: below (puts_after_gemm).
      const bool chunked = sdma && !p.one_device;
      const ChunkPlan plan = chunk_plan(x.s, cfg);
      const double puts_per_chunk = fp8_scatter ? 2.0 : 1.0;
      const double puts_per_queue = chunked ? plan.chunks * puts_per_chunk : 0.0;
      const double push_us = puts_per_queue * p.copy_engine.per_put_us + us_at(scatter_bytes, wire_rate);
      // fused-lsa over a link, where the profile says so: each CU's remote stores of a tile complete (a
      // round trip over the link) before it starts its next tile, so the push adds to the GEMM instead of
      // overlapping it (mori bench_gemm_ar.py @fc892894: "it spends 560us of its GEMM pushing C over xGMI").
      // That per-tile wait (kernels_fused.py, direct LSA: vmcnt(0), a barrier, one system fence per block, and
      // the block exits) takes the place of fused-sdma's epilogue tail (vmcnt(0) on local stores, a barrier,
      // the counter atomic, the elected put) that epilogue_slowdown prices: fused-lsa has no counter, no put and
      // no copy engine reading C during the GEMM, so it pays its own wait once, not both.
      const bool stores_serialize = !sdma && !p.one_device && std::isfinite(p.gemm.remote_store_tile_us);
      if (stores_serialize) gemm_f = gemm_only + push_us + x.waves() * p.gemm.remote_store_tile_us;
      // One device, fused-sdma: a put within one device is a copy kernel, not a copy engine (a device-to-device
      // copy waits for free SMs: `gemmar_gpu_bench copy-overlap`, docs/kernels.md "Thirteenth pass"), and the W
      // persistent GEMMs hold every SM until their last wave, so the puts run after the GEMM and the drain is the
      // split scatter's leg (measured on the H200 at ptpc 4096: drain 245 us, split scatter 217).
      const bool puts_after_gemm = sdma && p.one_device;
      double tail = 0.0;
      if (puts_after_gemm) {
        tail = copy_engine_scatter_us();
      } else if (chunked) {
        // Each destination's queue runs its puts one after another: chunk c of destination d leaves at max(the
        // last tile holding its rows done, chunk c-1 sent), its bytes the rows of its bands (the last band of a
        // relaxed-rows slice is short) at d's share of the links. Under relaxed rows a row block straddles two
        // owners and sorts by its first row's band, so the first band of the next owner waits for a block of the
        // previous owner's last band: most chunks are ready only at the GEMM's end (mori kernels_fused.py
        // @f3bff0ae, the relaxed tile order: "tiles sorted by (t*BLOCK_M % slice_rows)//BLOCK_M, then the
        // rotated owner").
        // The elected block submits a chunk's put when the chunk's count completes, so a queue takes its chunks in
        // the order they are ready, not by index.
        const std::vector<double> done = x.row_block_done(t_start, wave_us, gemm_f);
        const double bm = block_m(cfg.quant);
        double sent_last = 0.0;
        for (int d = 1; d < int(W); ++d) {              // rank 0's view; destination 0 is its own slice
          std::vector<std::pair<double, double>> puts;  // (ready, rows)
          for (int c = 0; c < plan.chunks; ++c) {
            const double lo = d * S + std::min(S, double(plan.first_band(c)) * bm);
            const double hi = d * S + std::min(S, double(plan.first_band(c) + plan.band_count(c)) * bm);
            double ready = 0.0;
            for (auto blk = int64_t(lo / bm); blk < int64_t(std::ceil(hi / bm)) && blk < int64_t(done.size()); ++blk)
              ready = std::max(ready, done[std::size_t(blk)]);
            puts.push_back({ready, hi - lo});
          }
          std::sort(puts.begin(), puts.end());
          double sent = 0.0;
          for (const auto& [ready, rows] : puts)
            sent = std::max(ready, sent) + puts_per_chunk * p.copy_engine.per_put_us +
                   us_at(scatter_bytes / (W - 1) * rows / S, wire_rate / (W - 1));
          sent_last = std::max(sent_last, sent);
        }
        const double sent = sent_last;
        tail = std::max(0.0, sent - gemm_f);
      } else if (!stores_are_c && !stores_serialize) {
        tail = std::max(0.0, t_start + wave_us + push_us - gemm_f);
      }
      gemm_phase(gemm_f, tail > 0 && !puts_after_gemm ? "link" : "compute", scatter_bytes);
      Phase d = phase("drain", tail + p.sync.barrier_us, scatter_bytes * std::min(1.0, tail / push_us),
                      tail > 0 ? "link" : "latency");
      d.link_bytes = d.bytes;
      if (puts_after_gemm) d.ceiling_us = us_at(scatter_bytes, x.sdma_rate());
      pr.phases.push_back(d);
      // One device, fused-lsa: the scatter is the GEMM's own C stores into the owners' slots (written once,
      // no copy), already in gemm_lb as C at HBM peak; a copy's read + write at the link's raw peak would put
      // the bound above the prediction of a store-bound GEMM (K <= 256).
      const double scatter_lb = stores_are_c ? 0.0 : us_at(scatter_bytes, x.link_peak_raw());
      lb += (pr.phases.back().lower_bound_us = std::max(gemm_lb, scatter_lb));
    } else {
      gemm_phase(gemm_only, "compute", 0.0);
      lb += (pr.phases.back().lower_bound_us = gemm_lb);
      if (mt.scatter_by_copy_engine) {
        Phase sc = phase("scatter", copy_engine_scatter_us() + p.sync.barrier_us, scatter_bytes, "link");
        sc.link_bytes = scatter_bytes;
        sc.ceiling_us = us_at(scatter_bytes, x.sdma_rate());
        pr.phases.push_back(sc);
        lb += (pr.phases.back().lower_bound_us = us_at(scatter_bytes, x.link_peak_raw()));
      }
    }
  }

  // split-lsa: one 2-stage CU all-reduce kernel.
  void allreduce() {
    // Stage 1 reads every peer's partial of the owned rows, stage 2 every peer's reduced rows (mori
    // kernels_lsa.py ar_2stage: one thread loads a 16-byte pack from every peer before it stores); the rate of
    // those CU loads over the W - 1 links is link.lsa_efficiency of the copy engines' protocol rate.
    const double link_b = 2 * (W - 1) * slice_bf16;
    const double hbm_b = W * slice_bf16 + slice_bf16 + (W - 1) * slice_bf16;
    const double lsa_rate = x.cu_rate() * p.link.lsa_efficiency;
    // Its loads in flight bound it too (Little's law): stage 1 reads the peers' C, whose misses in their
    // last-level cache lengthen each load (docs/model.md "cache"); stage 2 reads the just-reduced slices.
    const double in_flight = p.link.lsa_bytes_in_flight;
    const double little1 = in_flight / (p.pull.remote_latency_us * x.c_read_slowdown()) / 1e3;
    const double little2 = in_flight / p.pull.remote_latency_us / 1e3;
    double stage1 = std::max(
        {us_at((W - 1) * slice_bf16, std::min(lsa_rate, little1)), us_at(W * slice_bf16 + slice_bf16, x.hbm_rate())});
    double stage2 =
        std::max(us_at((W - 1) * slice_bf16, std::min(lsa_rate, little2)), us_at((W - 1) * slice_bf16, x.hbm_rate()));
    if (p.one_device) {
      // "Peer" loads are local HBM: the link bytes ARE HBM bytes, so each stage is its reads + writes at
      // the HBM rate (stage 1 reads W slices and writes one, stage 2 reads W-1 and writes W-1).
      stage1 = us_at(W * slice_bf16 + slice_bf16, x.hbm_rate());
      stage2 = us_at(2 * (W - 1) * slice_bf16, x.hbm_rate());
    }
    Phase a = phase("allreduce", L + stage1 + p.sync.barrier_us + stage2 + p.sync.barrier_us, link_b, "link");
    a.link_bytes = link_b;
    a.hbm_bytes = hbm_b;
    a.ceiling_us = p.one_device ? us_at(W * slice_bf16 + slice_bf16 + 2 * (W - 1) * slice_bf16, x.hbm_rate())
                                : std::max(us_at(link_b, x.cu_rate()), us_at(hbm_b, x.hbm_rate()));
    pr.phases.push_back(a);
    // One device: the "peer" loads are local HBM reads whose writes are already the local writes, so the phase
    // moves its two stages' reads + writes once (the ceiling's bytes), not link bytes as copies on top of them.
    lb += (pr.phases.back().lower_bound_us =
               p.one_device ? us_at(W * slice_bf16 + slice_bf16 + 2 * (W - 1) * slice_bf16, x.hbm_peak())
                            : std::max(us_at(link_b, x.link_peak_raw()), us_at(hbm_b, x.hbm_peak())));
  }

  // The owner's reduce of its slice (+ the fp8 wire's quantize, or both in one kernel).
  void reduce() {
    // --- reduce (+ quantize). Under an fp8 scatter it reads the W slots' codes and scales, its own included, and
    // widens them (kernels_sdma.py sdma_reduce @f3bff0ae, `if cfg.fp8_scatter`); it still writes bf16.
    const double reduce_b = W * (fp8_scatter ? fp8_scatter_slice_bytes() : slice_bf16) + slice_bf16;
    const double q_b = 2 * slice_bf16 + S * N + 4 * S;  // reads the bf16 slice twice, writes e4m3 + scales
    if (fp8 && cfg.fuse_quantize) {
      const double b = reduce_b + S * N + 4 * S;
      // mori kernels_sdma.py @f3bff0ae `sdma_reduce_quant`: a wave owns a row (QUANT_WAVES = 4 waves a block,
      // quant_blocks = min(1024, ceil(S / 4)) blocks, the row loop striding over all of them), because the per-row
      // amax is a butterfly within the wave. Its row is a chain of dependent round trips: the loads of the W slices
      // (bytes_in_flight_per_wave at a time), the amax, then the codes from registers; every row runs at once (up
      // to the grid's 4096 waves, then a wave takes its next row), so the chain is paid once per row a wave owns (on
      // one device the W ranks' rows run at once too). The chain does not hide the device's streaming, nor the
      // streaming the chain (mori's docstring: the one-wave-per-row map "scatters the block's footprint across the
      // slice" and loses to the flat reduce + the separate quantize, 977.1 against 957.4 us at [16384, 7168] on 8
      // ranks): the two add.
      const double grid_waves = std::min(4096.0, 4 * std::ceil(S / 4));
      const double rows_per_wave = std::ceil(S / grid_waves);
      const double chain = rows_per_wave * (b / S) / p.reduce_quantize.bytes_in_flight_per_wave * p.hbm.latency_us;
      const double stream = us_at(b, x.hbm_rate());
      const double us = L + stream + chain;
      const bool lat_bound = chain > stream;
      Phase r = phase("reduce", us, b, lat_bound ? "latency" : "hbm");
      r.hbm_bytes = b;
      r.ceiling_us = us_at(b, x.hbm_rate());
      pr.phases.push_back(r);
      lb += (pr.phases.back().lower_bound_us = us_at(b, x.hbm_peak()));
    } else {
      Phase r = phase("reduce", L + band_chain_us(us_at(reduce_b, x.hbm_rate())), reduce_b, "hbm");
      r.hbm_bytes = reduce_b;
      r.ceiling_us = us_at(reduce_b, x.hbm_rate());
      pr.phases.push_back(r);
      lb += (pr.phases.back().lower_bound_us = us_at(reduce_b, x.hbm_peak()));
      if (fp8) {
        const double q_rate = p.one_device ? p.hbm.quantize_gbps / x.share : x.hbm_rate();
        Phase q = phase("quantize", L + us_at(q_b, q_rate), q_b, "hbm");
        q.hbm_bytes = q_b;
        q.ceiling_us = us_at(q_b, x.hbm_rate());
        pr.phases.push_back(q);
        lb += (pr.phases.back().lower_bound_us = us_at(q_b, x.hbm_peak()));
      }
    }
  }

  // fuse_reduce_push (mori python/mori/ops/gemm_ar/README.md @0187031f, "Firing the gather's puts from inside the
  // reduce"): each of the B bands pays a barrier of the reducing blocks, a counter atomic and the elected block's
  // locked puts (band_sync_us); with publish=fence every reducing block also releases its stores to system scope
  // once per band (system_release_us each), and the band's cached stores, now dirty lines in L2, are written back
  // to memory before the releases complete: the band's bytes at release_writeback_gbps. The per-block part
  // grows with B, the written-back bytes do not (each reduced byte is written back once, whatever B).
  // Blocks do not wait for each other between bands, so the bands pipeline:
  // a band's work c (its share of the stream, plus the releases under fence) runs while the previous band's
  // sync posts its puts, and the posts follow one another through the per-peer locks; the chain is
  // c + (B - 1) max(c, sync) + sync (writethrough at many bands is sync-bound, fence always work-bound).
  double band_chain_us(double stream_us) const {
    if (!cfg.fuse_reduce_push) return stream_us;
    GEMMAR_USAGE_CHECK(std::isfinite(p.sync.band_sync_us) && std::isfinite(p.sync.system_release_us) &&
                           std::isfinite(p.sync.reduce_blocks) && std::isfinite(p.sync.release_writeback_gbps),
                       "--fuse-reduce-push: the profile has no sync.band_sync_us / sync.system_release_us / "
                       "sync.reduce_blocks / sync.release_writeback_gbps, so it cannot model the per-band publish");
    const double B = cfg.gather_bands;
    const double rel = cfg.publish == Publish::Fence ? p.sync.reduce_blocks * p.sync.system_release_us +
                                                           us_at(slice_bf16 / B, p.sync.release_writeback_gbps)
                                                     : 0.0;
    const double c = stream_us / B + rel, sync = p.sync.band_sync_us;
    return c + (B - 1) * std::max(c, sync) + sync;
  }
  // What the bands buy: the gather of band b overlaps the reduce of the later bands, so all of the reduce's
  // streaming time but its first band is hidden under the (longer) gather.
  double band_overlap_us() const {
    if (!cfg.fuse_reduce_push) return 0.0;
    const double reduce_b = W * slice_bf16 + slice_bf16;
    return us_at(reduce_b, x.hbm_rate()) * (1.0 - 1.0 / cfg.gather_bands);
  }

  // The all-gather: copy-engine puts (+ dequantize on the fp8 wire) or the CU pull.
  void gather() {
    // --- gather
    if (!lsa_gather) {
      const double gb = fp8 ? (W - 1) * (S * N + 4 * S) : (W - 1) * slice_bf16;
      // The fp8 wire carries the row scales in a second put; fuse_reduce_push puts each band on its own.
      const double puts = fp8 ? 2 : cfg.fuse_reduce_push ? cfg.gather_bands : 1;
      const double us = puts * p.copy_engine.per_put_us + (fp8 ? p.sdma_fp8.gather_handoff_us : 0.0) +
                        us_at(gb, x.sdma_rate()) + p.sync.barrier_us - band_overlap_us();
      Phase g = phase("gather", us, gb, "link");
      g.link_bytes = gb;
      g.ceiling_us = us_at(gb, x.sdma_rate());
      pr.phases.push_back(g);
      lb += (pr.phases.back().lower_bound_us = us_at(gb, x.link_peak_raw()));
      if (fp8) {
        const double db = (W - 1) * S * N + (W - 1) * slice_bf16;
        const double d_rate = p.one_device ? p.hbm.widen_gbps / x.share : x.hbm_rate();
        Phase d = phase("dequantize", L + p.sdma_fp8.dequantize_handoff_us + us_at(db, d_rate), db, "hbm");
        d.hbm_bytes = db;
        d.ceiling_us = us_at(db, x.hbm_rate());
        pr.phases.push_back(d);
        lb += (pr.phases.back().lower_bound_us = us_at(db, x.hbm_peak()));
      }
    } else {
      pr.phases.push_back(phase("gather", L + p.sync.barrier_us, 0, "latency"));
      const double e = fp8 ? 1.0 : 2.0;
      const double in_b = (W - 1) * S * N * e + (fp8 ? (W - 1) * 4 * S : 0.0);
      const double out_b = (W - 1) * slice_bf16;
      const PullRate r = pull_rate(x, cfg.pull_blocks);
      // ... but never faster than the W - 1 links' raw peak, the lower bound's (below W = 8 the whole mesh's
      // calibrated rate is more than the links a pull can use: gemmar model exited 3 at W = 2).
      double link_us = std::max(us_at(in_b, r.gbps), us_at(in_b, x.link_peak_raw())),
             hbm_us = us_at(out_b, x.hbm_rate());
      double us = L + std::max({link_us, hbm_us, p.pull.remote_latency_us});
      if (p.one_device) {
        // The W ranks' pull kernels run at once (graph branches on their own streams), so W x blocks blocks share
        // the device, at most one per SM resident. Per resident block: Little's law, and the streaming rate of
        // the SM it runs on; whichever binds. Against the widening kernel's device rate (fp8 in, bf16 out), the
        // two limits add in quadrature: a soft knee, monotone in the grid, flat once every SM holds a block.
        const double resident = std::min(x.share * cfg.pull_blocks, p.gemm.compute_units);
        const double little_us =
            x.share * in_b * p.pull.remote_latency_us / (resident * p.pull.bytes_in_flight_per_block);
        const double block_us = us_at(x.share * (in_b + out_b), resident * p.pull.block_gbps);
        link_us = std::max(little_us, block_us);
        hbm_us = us_at(in_b + out_b, p.hbm.widen_gbps / x.share);
        us = L + std::hypot(link_us, hbm_us);
      }
      Phase pl = phase("pull", us, (W - 1) * S * N * e,
                       hbm_us > link_us                    ? "hbm"
                       : (p.one_device || r.latency_bound) ? "latency"
                                                           : "link");
      pl.link_bytes = in_b;
      pl.hbm_bytes = out_b;
      pl.ceiling_us = p.one_device ? us_at(in_b + out_b, x.hbm_rate())
                                   : std::max(us_at(in_b, x.cu_rate()), us_at(out_b, x.hbm_rate()));
      pr.phases.push_back(pl);
      lb += (pr.phases.back().lower_bound_us = std::max(us_at(in_b, x.link_peak_raw()), us_at(out_b, x.hbm_peak())));
    }
  }
};

}  // namespace

const std::vector<int>& default_pull_grid() {
  static const std::vector<int> v{8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1024};
  return v;
}

Prediction predict(const Profile& prof, const Shape& shape, const Config& config) {
  validate_shape_config(shape, config);
  Config cfg = effective_config(config);
  std::vector<std::string> notes;
  bool fused_engaged = true;
  // Below fused_min_m the engine runs the split path (SPEC 1); a run that asked for a knob only the fused epilogue
  // takes (an fp8 scatter, --chunk-bands, relaxed rows, the op's chunk rule or schedule: mori's op and its
  // harness run the fused epilogue at any M) did run fused.
  const bool fused_only_knobs = cfg.scatter_dtype == WireDtype::Fp8 || cfg.chunk_bands > 0 || cfg.relaxed_rows ||
                                cfg.schedule == Schedule::WoB || cfg.chunk_rule == ChunkRule::Op;
  if (is_fused(cfg.mode) && double(shape.m) < prof.params.fused_min_m && !fused_only_knobs) {
    fused_engaged = false;
    std::ostringstream os;
    os << "the fused path engages only at M >= " << prof.params.fused_min_m << ": modeled as split-sdma";
    notes.push_back(os.str());
    cfg.mode = Mode::SplitSdma;
  }
  if (!prof.params.gemm.has_ratio(cfg.quant))
    notes.push_back(prof.origin + " has no gemm.efficiency_ratio." + to_string(cfg.quant) + ": the " +
                    to_string(cfg.quant) + " GEMM is modeled at " + to_string(base_quant()) + "'s rate");
  if (cfg.mode == Mode::FusedSdma && !prof.params.one_device && cfg.chunks > 0 &&
      effective_chunks(shape, cfg) != cfg.chunks) {
    const int64_t bm = block_m(cfg.quant);
    std::ostringstream os;
    os << "--chunks " << cfg.chunks << " runs as " << effective_chunks(shape, cfg)
       << ": mori halves the chunks until they divide a destination's "
       << std::max<int64_t>(1, (shape.m + bm - 1) / bm / shape.world) << " M-tiles";
    notes.push_back(os.str());
  }
  const Ctx x(prof.params, shape, cfg);
  PredictionBuilder b(x, cfg);
  b.pr.fused_engaged = fused_engaged;
  b.pr.notes = notes;
  b.gemm_and_scatter();
  if (traits(cfg.mode).two_stage_allreduce) {
    b.allreduce();
  } else if (has_collective(cfg.mode)) {
    b.reduce();
    b.gather();
  }
  Prediction& pr = b.pr;
  for (const auto& ph : pr.phases) pr.in_server_us += ph.us;
  if (has_collective(cfg.mode)) pr.phases.push_back(phase("skew", x.p.standalone.rank_skew_us, 0, "latency"));
  for (const auto& ph : pr.phases) pr.total_us += ph.us;
  pr.lower_bound_us = b.lb;
  GEMMAR_CHECK(pr.lower_bound_us > 0 && pr.lower_bound_us <= pr.total_us, "lower bound ", pr.lower_bound_us,
               " above the prediction ", pr.total_us);
  return pr;
}

double per_call_in_graph_us(const Prediction& pr, int calls) {
  GEMMAR_USAGE_CHECK(calls >= 1, "calls per graph: ", calls, " must be >= 1");
  double skew = 0.0;
  for (const auto& ph : pr.phases)
    if (ph.name == "skew") skew = ph.us;
  return pr.total_us - skew * (1.0 - 1.0 / calls);
}

Sweep sweep_pull_blocks(const Profile& prof, const Shape& shape, const Config& config, const std::vector<int>& values) {
  GEMMAR_USAGE_CHECK(!values.empty(), "--values: the sweep needs at least one value");
  std::vector<int> v = values;
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
  Sweep sw;
  for (int b : v) {
    GEMMAR_USAGE_CHECK(b >= 1 && b <= 65536, "--values: ", b, " is out of range [1, 65536]");
    Config c = config;
    c.pull_blocks = b;
    sw.points.push_back({b, predict(prof, shape, c).total_us});
  }
  std::size_t best = 0;
  for (std::size_t i = 1; i < sw.points.size(); ++i)
    if (sw.points[i].total_us < sw.points[best].total_us) best = i;
  const double limit = sw.points[best].total_us * 1.01;
  std::size_t lo = best, hi = best;
  while (lo > 0 && sw.points[lo - 1].total_us <= limit) --lo;
  while (hi + 1 < sw.points.size() && sw.points[hi + 1].total_us <= limit) ++hi;
  sw.optimum = sw.points[best].value;
  sw.band_lo = sw.points[lo].value;
  sw.band_hi = sw.points[hi].value;
  return sw;
}

nlohmann::json to_json(const Prediction& pr) {
  nlohmann::json phases = nlohmann::json::array();
  for (const auto& ph : pr.phases)
    phases.push_back({{"name", ph.name},
                      {"us", ph.us},
                      {"bytes", ph.bytes},
                      {"bound", ph.bound},
                      {"flops", ph.flops},
                      {"link_bytes", ph.link_bytes},
                      {"hbm_bytes", ph.hbm_bytes},
                      {"ceiling_us", ph.ceiling_us}});
  return {{"total_us", pr.total_us},
          {"lower_bound_us", pr.lower_bound_us},
          {"in_server_us", pr.in_server_us},
          {"fused_engaged", pr.fused_engaged},
          {"notes", pr.notes},
          {"phases", phases}};
}

nlohmann::json to_json(const Sweep& sw) {
  nlohmann::json pts = nlohmann::json::array();
  for (const auto& pt : sw.points) pts.push_back({{"value", pt.value}, {"total_us", pt.total_us}});
  return {{"points", pts}, {"optimum", {{"value", sw.optimum}, {"band", {sw.band_lo, sw.band_hi}}}}};
}

}  // namespace gemmar::model
