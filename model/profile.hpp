// The physical parameters of a hardware profile, as parsed and validated from model/profiles/*.json.
// Every field is one leaf {"value": v, "source": "..."} of the document; see docs/model.md for each one.
#pragma once
#include <algorithm>
#include <limits>
#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "common/modes.hpp"

namespace gemmar::model {

enum class Medium { Xgmi, Nvlink, Hbm };

// The quant whose K loop gemm.achieved_efficiency is (the first row of the quant table); the others are ratios to it.
constexpr Quant base_quant() { return kQuantTable[0].quant; }  // hbm: the W ranks are emulated on one device

struct Params {
  bool one_device = false;  // all W ranks' kernels and traffic share one device
  double fused_min_m = 4096;
  struct {
    double fp8_tflops_dense = 0, compute_units = 0, tile_n = 0, achieved_efficiency = 0;
    // The datasheet's dense fp8 rate, for the lower bound only (absent: fp8_tflops_dense). A profile whose
    // fp8_tflops_dense is a measured vendor rate (h200, h200-1gpu: the GEMM term is the vendor ceiling) needs it,
    // or a GEMM faster than that vendor's reads as "below what moving its bytes takes" (FASTER_THAN_PHYSICS).
    double peak_tflops_dense = 0;
    double launch_us = 0, epilogue_slowdown = 0;
    // Optional (absent: 0 and 1, a whole wave per started wave). A tile's fixed cost beside its K loop (the C
    // store and the prologue), and the part of a tile's K loop that does not speed up when only part of the
    // CUs run (the MFMA issue): the rest is memory time, shared by the tiles in flight, so a last wave of
    // f x compute_units tiles takes tile_epilogue_us x f + k_loop x (c + (1 - c) x f).
    double tile_epilogue_us = 0, partial_wave_compute_fraction = 1;
    // fused-lsa over a link: the epilogue's remote stores of a tile complete before its CU starts the next one
    // (absent, NaN: they overlap the GEMM like copy-engine puts); the per-tile wait for that completion.
    double remote_store_tile_us = std::numeric_limits<double>::quiet_NaN();
    // Optional (absent: 0, 128). One main-loop iteration per BLOCK_K of K that the GEMM pays outside its steady
    // state of tile waves (the first wave's pipeline fill, the last wave's drain): a fixed cost proportional to
    // K, paid before the first tile is done too (the fused path's first push) (docs/model.md "GEMM").
    double k_iter_latency_us = 0, block_k = 128;
    // Optional (absent, NaN: an fp8 scatter cannot be modeled). One CU's rate for its epilogue's own traffic: the
    // fp8 scatter re-reads a finished bf16 tile and writes its e4m3 codes and scales before the block exits.
    double epilogue_cu_gbps = std::numeric_limits<double>::quiet_NaN();
    // Optional (absent, NaN: relaxed rows cannot be modeled). Relaxed rows: what a tile's epilogue pays more for
    // counting each (owner, chunk) segment it intersects.
    double relaxed_tile_us = std::numeric_limits<double>::quiet_NaN();
    // "gemm.efficiency_ratio": {QUANT: leaf}: each quant's achieved MFMA rate against the base quant's (the first
    // row of common/modes.hpp's quant table, blockscale, whose rate is achieved_efficiency). A quant the profile
    // does not list runs at the base's rate, and the prediction says so (Prediction::notes).
    std::map<Quant, double> efficiency_ratio;
    bool has_ratio(Quant q) const { return q == base_quant() || efficiency_ratio.count(q) != 0; }
    double ratio(Quant q) const {
      const auto it = efficiency_ratio.find(q);
      return it == efficiency_ratio.end() ? 1.0 : it->second;
    }
  } gemm;
  struct {
    // Optional (absent: no cache term). The last-level cache in front of HBM (MI355X: 256 MB Infinity Cache)
    // and how much slower, relative to a hit, a remote CU load or copy-engine read of C is when it misses it.
    double capacity_mb = 0, miss_slowdown = 0;
  } cache;
  struct {
    double peak_gbps = 0, efficiency = 0, latency_us = 0;
    double copy_gbps = 0;  // medium hbm only: CU copy rate, bytes copied per second
    // medium hbm only: our conversion kernels' device rates, bytes read + written per second
    double quantize_gbps = 0, widen_gbps = 0;
  } hbm;
  struct {
    Medium medium = Medium::Xgmi;
    double links = 0, gbps_per_direction = 0;  // not on medium hbm
    double protocol_efficiency = 1, scatter_efficiency = 1;
    // Optional (absent: 1): the split-lsa all-reduce kernel's CU loads over the links, as a fraction of the
    // protocol rate (its grid and loads in flight, kernels_lsa.py ar_2stage).
    double lsa_efficiency = 1;
    // Optional (absent: scatter_efficiency): fused-lsa's push, the GEMM epilogue's CU stores into the peers'
    // receive slots, as a fraction of the protocol rate.
    double remote_store_efficiency = 1;
    // Optional (absent: unbounded): the split-lsa kernel's bytes of remote loads in flight per rank (its grid x
    // loads per thread), whose Little's-law rate binds when its loads miss the peer's cache.
    double lsa_bytes_in_flight = std::numeric_limits<double>::infinity();
    // Links a rank of a W-rank run drives: on a fully connected xGMI mesh one per peer, W - 1 (a 4-rank run
    // on an 8-GPU node uses 3 of its 7); behind a switch (NVLink) every link whatever W.
    double links_used(double world) const {
      return medium == Medium::Xgmi ? std::min(links, std::max(1.0, world - 1)) : links;
    }
  } link;
  struct {
    double per_put_us = 0;
    double d2d_gbps = 0;  // medium hbm only: copy-engine device-to-device rate
    double aggregate_gbps = std::numeric_limits<double>::infinity();  // all links' puts at once, per GPU
  } copy_engine;
  struct {
    double kernel_launch_us = 0, barrier_us = 0;
    // Outside a graph: each kernel's host launch and launch-to-start gap, the allowance an eager-timed run gets
    // per kernel (validate/verdict/basis.cpp). Absent from a profile: gemm.launch_us.
    double eager_launch_us = 0;
    // Optional (NaN when the profile has none: then --fuse-reduce-push cannot be modeled). Per band of
    // fuse_reduce_push: the barrier of the reducing blocks, the counter atomic and the elected block's locked
    // puts; and, with publish=fence, one system-scope release (an L2 writeback) per reducing block.
    double band_sync_us = std::numeric_limits<double>::quiet_NaN();
    double system_release_us = std::numeric_limits<double>::quiet_NaN();
    // publish=fence: the rate at which the releases write the reduce's dirty L2 lines back to memory
    double release_writeback_gbps = std::numeric_limits<double>::quiet_NaN();
    double reduce_blocks = std::numeric_limits<double>::quiet_NaN();  // the reduce kernel's grid
  } sync;
  struct {
    double gather_handoff_us = 0, dequantize_handoff_us = 0;
  } sdma_fp8;
  struct {
    double bytes_in_flight_per_block = 0, remote_latency_us = 0, contention_k = 0;
    // medium hbm only: one block's streaming rate (bytes read + written per second): a block runs on one SM/CU,
    // so a grid of B blocks moves at most min(B, compute_units) x block_gbps
    double block_gbps = 0;
  } pull;
  struct {
    double bytes_in_flight_per_wave = 0;
  } reduce_quantize;
  struct {
    double rank_skew_us = 0;
  } standalone;
};

// Parses and validates; `origin` (a file name or "profiles/NAME.json") prefixes every error message:
// "<origin>: <field.path>: <what is wrong>". Throws UsageError.
Params parse_params(const nlohmann::json& doc, const std::string& origin);

const std::map<std::string, std::string>& embedded_profiles();  // generated by model/CMakeLists.txt

}  // namespace gemmar::model
