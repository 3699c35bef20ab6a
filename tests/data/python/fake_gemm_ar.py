"""gemm_ar in numpy, for the CPU tests of `gemmar validate|run --backend python` (tests/validate/harness/
harness_python_backend_test.cpp): python/gemmar_runner.py's implementation protocol with no torch and no device.

The GEMM decodes the e4m3fn codes and applies the blockscale scales per 128-wide K block in fp32, rounded to bf16 (the
partial). The collective is docs/spec.md 1.1 on the bf16 wire: each owner sums its slice of the W bf16 partials in
fp32 in peer order (owner + j) % W from its own value, rounds to bf16, and every rank copies it. fused-sdma also with
mori's fp8 scatter (scatter_dtype "fp8", docs/reference.md): every rank narrows its whole bf16 partial per row and
256 columns, scale = fl32(amax / 448) (1 for an all-zero segment), codes = RNE(x * fl32(1 / scale)); each owner sums
decode(code) * scale in fp32 in the same peer order. python/gemmar_torch_impl.py does the same in torch. Variants, by name
(--impl FILE:NAME):

    FakeGemmAr             every rank in one process
    FakeGemmArPerRank      one rank per process, the partials exchanged through the runner's file group
    skip_gather            rank min(3, W-1) never receives slice (that rank + 2) % W: it keeps its own partial there
    skip_gather_per_rank   the same, one rank per process
    bad_self_test          a self_test that fails (the run itself is clean)
    queue_fail_once        setup raises mori's queue-creation failure once (a marker file, $FAKE_QUEUE_MARKER)
    queue_fail_always      setup always raises it
    hang                   call never returns (gemmar's --run-timeout)
    scatter_not_narrowed   fused-sdma with the fp8 scatter asked, but the bf16 partials reduced
"""
import os
import time

import numpy as np

import gemmar_runner as gr


def gemm(a, a_scale, b, b_scale, quant):
    """fp32 C = A B^T with blockscale (1x128 A, 128x128 B) or ptpc scales."""
    A, B = gr.e4m3fn_decode(a), gr.e4m3fn_decode(b)
    if quant == "ptpc":
        return (A @ B.T) * a_scale[:, None] * b_scale[None, :]
    out = np.zeros((A.shape[0], B.shape[0]), np.float32)
    b_cols = np.repeat(b_scale, 128, axis=0)  # [N, K/128]
    for i in range(A.shape[1] // 128):
        ks = slice(i * 128, (i + 1) * 128)
        out += (A[:, ks] @ B[:, ks].T) * a_scale[:, i:i + 1] * b_cols[:, i][None, :]
    return out


def slice_rows(shape, world):
    """Rows per owner: M padded to W x 128 (blockscale's BLOCK_M), divided by W."""
    granule = world * 128
    return (shape["m"] + granule - 1) // granule * granule // world


def fp8_scatter_values(bits):
    """What the fp8 scatter delivers of one rank's bf16 partial (bits [M, N]): decode(code) * scale, fp32."""
    x = gr.bf16_value(bits).reshape(bits.shape[0], -1, 256)
    amax = np.max(np.abs(x), axis=2, keepdims=True)  # NaN-propagating, as the kernel's maximumf
    scale = np.where(amax == 0, np.float32(1), amax / np.float32(448)).astype(np.float32)
    codes = gr.e4m3fn_encode(x * (np.float32(1) / scale))
    return (gr.e4m3fn_decode(codes) * scale).astype(np.float32).reshape(bits.shape)


def collective(partials, mode, world, rows_per_owner, fault, scatter_fp8=False):
    """Every rank's output (bf16 bits) from every rank's bf16 partial (bits)."""
    outs = [p.copy() for p in partials]
    if mode == "gemm-only":
        return outs
    m = partials[0].shape[0]
    skip = (min(3, world - 1), (min(3, world - 1) + 2) % world) if fault == "skip-gather" else None
    sent = [fp8_scatter_values(p) if scatter_fp8 else gr.bf16_value(p) for p in partials]
    for owner in range(world):
        rows = slice(owner * rows_per_owner, min(m, (owner + 1) * rows_per_owner))
        acc = sent[owner][rows]
        for j in range(1, world):
            acc = acc + sent[(owner + j) % world][rows]
        reduced = gr.bf16_bits(acc)
        for r in range(world):
            if skip != (r, owner):  # the skipped put never landed: the in-place buffer keeps the local partial
                outs[r][rows] = reduced
    return outs


class FakeGemmAr:
    name = "fake-numpy"
    array = "numpy"
    ranks_per_process = "all"
    default_m = [512]
    fault = None

    def supports(self, config, shape):
        wires = config["gather_dtype"] == "bf16" and not config.get("fuse_quantize", False)
        fused = config["mode"] == "fused-sdma" and config["gather_transport"] == "sdma"
        if config.get("scatter_dtype", "bf16") == "fp8" and not fused:
            return False
        return config["quant"] in ("blockscale", "ptpc") and wires and \
            (config["mode"] in ("gemm-only", "split-sdma", "split-lsa") or fused)

    def setup(self, config, shape, rank, device):
        return dict(config=config, shape=shape, rank=rank)

    def _partials(self, handle, a, a_scale, b, b_scale):
        return [gr.bf16_bits(gemm(a[r], a_scale[r], b[r], b_scale[r], handle["config"]["quant"]))
                for r in range(len(a))]

    def _collective(self, handle, partials):
        world, config = handle["shape"]["world"], handle["config"]
        return collective(partials, config["mode"], world, slice_rows(handle["shape"], world), self.fault,
                          config.get("scatter_dtype") == "fp8")

    def call_with_partials(self, handle, a, a_scale, b, b_scale):
        partials = self._partials(handle, a, a_scale, b, b_scale)
        return self._collective(handle, partials), partials

    def call(self, handle, a, a_scale, b, b_scale):
        return self.call_with_partials(handle, a, a_scale, b, b_scale)[0]

    def self_test(self, handle):
        """Every rank's partial rank + 1; every element of every output must be W(W+1)/2."""
        if handle["config"]["mode"] == "gemm-only":
            return
        world, m, n = handle["shape"]["world"], handle["shape"]["m"], handle["shape"]["n"]
        partials = [np.full((m, n), gr.bf16_bits(np.float32(r + 1)), np.uint16) for r in range(world)]
        check_self_test(self._collective(handle, partials), world, slice_rows(handle["shape"], world),
                        tolerance=self_test_tolerance(handle))


def self_test_tolerance(handle):
    """Exact on the bf16 wire; 1e-2 relative with the fp8 scatter (mori's op.py self_test: worst <= 1e-2)."""
    return 1e-2 if handle["config"].get("scatter_dtype") == "fp8" else 0.0


def check_self_test(outs, world, rows_per_owner, ranks=None, tolerance=0.0):
    want = world * (world + 1) // 2
    for i, out in enumerate(outs):
        rank = i if ranks is None else ranks[i]
        got = gr.bf16_value(out)
        bad = np.argwhere(~(np.abs(got - want) <= tolerance * want))
        if len(bad):
            row = int(bad[0][0])
            raise RuntimeError("self-test: rank %d's copy of slice %d holds %g where %d was expected"
                               % (rank, row // rows_per_owner, float(got[row, bad[0][1]]), want))


class FakeGemmArPerRank(FakeGemmAr):
    """One rank per process: each rank's partial reaches the others through the runner's file group."""
    ranks_per_process = "one"

    def _all_partials(self, mine):
        def write(path):
            with open(path, "wb") as f:
                np.save(f, mine)
        return gr.group().exchange("partial", write, lambda path: np.load(path))

    def call_with_partials(self, handle, a, a_scale, b, b_scale):
        mine = gr.bf16_bits(gemm(a, a_scale, b, b_scale, handle["config"]["quant"]))
        outs = self._collective(handle, self._all_partials(mine))
        return outs[handle["rank"]], mine

    def self_test(self, handle):
        world, m, n = handle["shape"]["world"], handle["shape"]["m"], handle["shape"]["n"]
        mine = np.full((m, n), gr.bf16_bits(np.float32(handle["rank"] + 1)), np.uint16)
        outs = self._collective(handle, self._all_partials(mine))
        check_self_test([outs[handle["rank"]]], world, slice_rows(handle["shape"], world), [handle["rank"]],
                        self_test_tolerance(handle))


def skip_gather():
    impl = FakeGemmAr()
    impl.fault, impl.name = "skip-gather", "fake-numpy-skip-gather"
    return impl


def skip_gather_per_rank():
    impl = FakeGemmArPerRank()
    impl.fault, impl.name = "skip-gather", "fake-numpy-skip-gather"
    return impl


class _BadSelfTest(FakeGemmAr):
    def self_test(self, handle):
        raise RuntimeError("gemm_ar self-test failed: the all-reduce returned 1 where 10 was expected")


def bad_self_test():
    return _BadSelfTest()


class _QueueFail(FakeGemmAr):
    always = False

    def setup(self, config, shape, rank, device):
        marker = os.environ.get("FAKE_QUEUE_MARKER", "")
        if self.always or (marker and not os.path.exists(marker)):
            if marker:
                open(marker, "w").close()
            raise RuntimeError("SDMA queue: hsaKmtCreateQueueExt failed (fake of mori's anvil.cpp:237)")
        return super().setup(config, shape, rank, device)


def queue_fail_once():
    return _QueueFail()


def queue_fail_always():
    impl = _QueueFail()
    impl.always = True
    return impl


class _Hang(FakeGemmAr):
    def call_with_partials(self, handle, a, a_scale, b, b_scale):
        time.sleep(3600)


def hang():
    return _Hang()


class _ScatterNotNarrowed(FakeGemmAr):
    """Claims mori's fp8 scatter but reduces the bf16 partials (the scatter leg never narrowed)."""
    name = "fake-numpy-scatter-not-narrowed"

    def _collective(self, handle, partials):
        world = handle["shape"]["world"]
        return collective(partials, handle["config"]["mode"], world, slice_rows(handle["shape"], world), self.fault)


def scatter_not_narrowed():
    return _ScatterNotNarrowed()
