# Writes tests/data/check/mori_2026_09/: the shapes today's ROCm/mori prints (issue 46), each from the print statement
# it copies, cited with file:line@commit below and in the file's first line. Values are made up (healthy runs' times
# near gemmar's mi355x model, so its timing rules pass them); formats are mori's.
# The shapes, with every source line: /work/mori-notes/print-shapes.md. Run: python3 make_mori_logs_2026_09.py
import json, os

D = os.path.join(os.path.dirname(os.path.abspath(__file__)), "mori_2026_09") + "/"
os.makedirs(D, exist_ok=True)
BENCH = "benchmark/cco/flydsl/gemm_ar/bench_gemm_ar.py @d54433365ce88da1c0986ce7e15b02ca69ce7852"
TEST_BENCH = "tests/python/cco/test_gemm_ar_bench.py @e760674677dc9ddbae78f47522c21c9ea84953ca"
SWEEP = "benchmark/cco/flydsl/gemm_ar/sweep.py @4488353a821c4ab739c667484f4dafbf149d8b36"
WORKER = "tests/python/cco/gemm_ar_op_worker.py @54e74a02e90bebf3e66e64b8be5712a29a488184"
SCHED = "tests/python/cco/gemm_ar_schedule_worker.py @f3bff0aed1fa5d77297d6b8ea6240255ad9534c6"
WIRE = "tests/python/cco/gemm_ar_wire_reference.py @f3bff0aed1fa5d77297d6b8ea6240255ad9534c6"
OP = "python/mori/ops/gemm_ar/op.py @f3bff0aed1fa5d77297d6b8ea6240255ad9534c6 (GemmAllReduceOp.self_test)"

BANNER = ["W0929 10:14:01.123000 4242 torch/distributed/run.py:793] *****************************************"]


def write(name, source, lines):
    with open(D + name, "w") as f:
        f.write("# shape: ROCm/mori %s\n" % source)
        f.write("\n".join(lines) + "\n")


def result(mode, m, t, rel, w=8, n=7168, quant="blockscale", validated=True, scatter="bf16", gather="bf16",
           transport="sdma", chunk_bands=0, relaxed=False):
    """bench_gemm_ar.py @d5443336 :561-604, the `result` dict rank 0 prints: chunk_bands, relaxed_rows, scatter_dtype
    and sdma_queues added; fence, gemm_impl and tile gone."""
    fused = mode.startswith("fused")
    block_m = 128 if quant == "blockscale" else 256
    chunks = None
    if fused:
        if chunk_bands:  # :325-329
            bands = (m // w + block_m - 1) // block_m
            chunks = (bands + chunk_bands - 1) // chunk_bands
        else:  # :330-337: 8, halved until it divides the M-tiles per destination
            chunks, tiles = 8, max(1, (m + block_m - 1) // block_m // w)
            while chunks > 1 and tiles % chunks:
                chunks //= 2
    per = [round(t - 0.3 * ((r * 7) % 5), 2) for r in range(w)]
    per[0] = t
    return {"mode": mode, "world_size": w, "m": m, "n": n, "k": 2048, "quant": quant, "block_m": block_m,
            "block_n": 256, "chunks": chunks, "chunk_bands": chunk_bands, "relaxed_rows": relaxed,
            "tile_order": "auto", "swap_ab": True, "permlane": True, "lane_transpose": True, "stop_after": "all",
            "gather_dtype": gather, "scatter_dtype": scatter, "gather_transport": transport, "fuse_quantize": False,
            "fuse_reduce_push": False, "publish": "writethrough", "gather_bands": 8, "sdma_queues": 8,
            "atomic_order": "acq_rel", "resolved_tile_order": "rotated" if fused else "linear",
            "max_rank_time_us": t, "critical_rank": 0, "per_rank_time_us": per, "rel_l2": rel,
            "validated": validated, "timing": "graph"}


def rj(d):  # :605 print("RESULT_JSON " + json.dumps(result, sort_keys=True), flush=True)
    return "RESULT_JSON " + json.dumps(d, sort_keys=True)


def human(d):  # :606-611
    return "[gemm_ar] mode=%s m=%d n=%d k=%d max_rank_time=%.2fus relL2=%.2e validated=%s" % (
        d["mode"], d["m"], d["n"], d["k"], d["max_rank_time_us"], d["rel_l2"], d["validated"])


def torchrun_failed(script, ranks=(0,), pid=4250):
    """torchrun's report of ranks that exited 1: its `failed (exitcode: 1)` line and ChildFailedError traceback."""
    out = ["E0929 10:14:55.123000 4242 torch/distributed/elastic/multiprocessing/api.py:869] failed (exitcode: 1) "
           "local_rank: %d (pid: %d) of binary: /opt/venv/bin/python3" % (ranks[0], pid),
           "Traceback (most recent call last):",
           '  File "/opt/venv/lib/python3.12/site-packages/torch/distributed/run.py", line 922, in <module>',
           "    main()",
           "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ",
           "============================================================",
           "%s FAILED" % script,
           "------------------------------------------------------------",
           "Root Cause (first observed failure):",
           "[0]:",
           "  exitcode  : 1 (pid: %d)" % pid,
           "============================================================"]
    return out


def traceback(rank, frames, exception):
    """A Python traceback under torchrun's `[rankN]: ` prefix; frames are (file, line, function, code)."""
    lines = ["[rank%d]: Traceback (most recent call last):" % rank]
    for path, line, func, code in frames:
        lines += ['[rank%d]:   File "%s", line %d, in %s' % (rank, path, line, func), "[rank%d]:     %s" % (rank, code)]
    return lines + ["[rank%d]: %s" % (rank, exception)]


# --- 1. the keys added (chunk_bands, relaxed_rows, scatter_dtype, sdma_queues) and removed (fence, gemm_impl, tile).
runs = [result("fused-sdma", 16384, 1146.2, 2.3509e-3), result("split-sdma", 16384, 1465.5, 2.3512e-3),
        result("fused-sdma", 16384, 1150.3, 2.3509e-3, chunk_bands=3),
        # mori's own cell for this run: W = 4 mxfp8 M = 4200 on relaxed rows (padded to 4224), chunk_bands = 1,
        # 449.26 us (bench_gemm_ar.py's README @d5443336 :249).
        result("fused-sdma", 4224, 449.3, 2.3514e-3, w=4, n=5120, quant="mxfp8", chunk_bands=1, relaxed=True)]
write("bench_keys.log", BENCH + " :561-611", BANNER + sum(([rj(d), human(d)] for d in runs), []))

# --- 2. fp8 scatter (--scatter-dtype fp8, :800; fused-sdma only). Healthy relL2 as published: W=8 blockscale 0.0262
# (fp8 scatter, bf16 gather) and 0.0361 (both fp8); W=4 mxfp8 5120x2048 0.0262 / 0.0348.
runs = [result("fused-sdma", 16384, 1080.4, 2.62e-2, scatter="fp8"),
        result("fused-sdma", 16384, 905.1, 3.61e-2, scatter="fp8", gather="fp8"),
        result("fused-sdma", 16384, 760.2, 2.62e-2, w=4, n=5120, quant="mxfp8", scatter="fp8"),
        result("fused-sdma", 16384, 640.7, 3.48e-2, w=4, n=5120, quant="mxfp8", scatter="fp8", gather="fp8",
               transport="lsa")]
write("fp8_scatter.log", BENCH + " :530-543 (the gate for either fp8 leg)", sum(([rj(d), human(d)] for d in runs), []))

# The fp8 scatter asked for, the bf16 floor measured: below the gate's 5e-3, every rank fails (:540-541), validated
# is the minimum (:555-558), rank 0 returns 1 (:617).
d = result("fused-sdma", 16384, 1146.9, 2.3509e-3, scatter="fp8", validated=False)
write("fp8_scatter_not_engaged.log", BENCH + " :530-543, :617", BANNER +
      ["[rank %d] VALIDATION FAILED relL2=%.3e" % (r, 2.3509e-3 + 1e-7 * r) for r in range(8)] +
      [rj(d), human(d)] + torchrun_failed("bench_gemm_ar.py"))

# Two ranks over the gate's 4e-2, rank 0 inside it.
d = result("fused-sdma", 16384, 1081.0, 2.63e-2, scatter="fp8", validated=False)
write("fp8_scatter_over_gate.log", BENCH + " :530-543", BANNER +
      ["[rank 2] VALIDATION FAILED relL2=4.310e-02", "[rank 6] VALIDATION FAILED relL2=4.522e-02", rj(d), human(d)] +
      torchrun_failed("bench_gemm_ar.py"))

# --- 3. refusals. split-lsa with an fp8 gather: SystemExit before the communicator (:274-285), one stderr line per rank.
write("split_lsa_fp8_refused.log", BENCH + " :274-285", BANNER +
      ["--mode split-lsa has no fp8 gather leg (build_lsa_ar takes no gather_dtype); use split-sdma or fused-sdma "
       "for --gather-dtype fp8"] * 4 + torchrun_failed("bench_gemm_ar.py"))
# An fp8 scatter outside fused-sdma: ValueError after _setup_distributed (:287-288), a traceback per rank.
tb = []
for r in (0, 1):
    tb += traceback(r, [("/work/mori/benchmark/cco/flydsl/gemm_ar/bench_gemm_ar.py", 812, "<module>",
                         "sys.exit(run(build_parser().parse_args()))"),
                        ("/work/mori/benchmark/cco/flydsl/gemm_ar/bench_gemm_ar.py", 288, "run",
                         'raise ValueError("FP8 scatter experiment is wired only through fused-sdma")')],
                    "ValueError: FP8 scatter experiment is wired only through fused-sdma")
write("fp8_scatter_not_fused.log", BENCH + " :287-288", BANNER + tb + torchrun_failed("bench_gemm_ar.py"))

# --- 4. test_gemm_ar_bench.py -s -v: the per-mode print (:100-104) and the model-shape block (:122-128).
def mode_line(mode, m, n, k, quant, us, rel):  # f"\n[gemm_ar] {mode:<11s} m= n= k= quant=  {us:9.1f} us  relL2={:.2e}"
    return "[gemm_ar] %-11s m=%d n=%d k=%d quant=%s  %9.1f us  relL2=%.2e" % (mode, m, n, k, quant, us, rel)


def block(f, s, rf=2.3509e-3, rs=2.3512e-3):  # :122-128
    return ["[gemm_ar] model shape m=16384 n=7168 k=2048",
            "           fused-sdma %9.1f us  relL2=%.2e" % (f, rf),
            "           split-sdma %9.1f us  relL2=%.2e" % (s, rs),
            "           fused is %+.1f%% against split" % ((1 - f / s) * 100)]


T = "tests/python/cco/test_gemm_ar_bench.py::"
write("pytest_bench_s.log", TEST_BENCH + " :100-104, :122-128", [
    "============================= test session starts ==============================",
    "collected 4 items", ""] +
    sum(([T + "test_mode_is_accurate_and_reports_a_time[%s] " % mode,
          mode_line(mode, 4096, 1024, 512, "blockscale", us, rel), "PASSED"]
         # The smoke shape's times are not measured (mori publishes none at 4096 x 1024 x 512): healthy figures near
         # the mi355x model's (gemm-only 13.4 us).
         for mode, us, rel in (("gemm-only", 13.9, 1.66e-3), ("split-sdma", 84.1, 2.35e-3),
                               ("fused-sdma", 92.8, 2.36e-3))), []) +
    [T + "test_fusing_beats_splitting_at_the_model_shape "] + block(1146.2, 1465.5) + ["PASSED",
     "============================== 4 passed in 212.31s ============================="])
# fused did not beat split: the block, then pytest's report of `assert f < s` (:132-136).
write("pytest_bench_fused_slower.log", TEST_BENCH + " :122-136", [
    T + "test_fusing_beats_splitting_at_the_model_shape "] + block(1480.2, 1465.5) + ["FAILED", "",
    "=================================== FAILURES ===================================",
    "________________ test_fusing_beats_splitting_at_the_model_shape ________________",
    ">       assert f < s, (",
    "E       AssertionError: fused-sdma (1480.2 us) did not beat split-sdma (1465.5 us). The recorded margin is "
    "21.8%, so this is a real regression unless the runner was heavily contended.",
    "E       assert 1480.2 < 1465.5", "",
    "tests/python/cco/test_gemm_ar_bench.py:132: AssertionError",
    "=========================== short test summary info ============================",
    "FAILED tests/python/cco/test_gemm_ar_bench.py::test_fusing_beats_splitting_at_the_model_shape - "
    "AssertionError: fused-sdma (1480.2 us) did not beat split-sdma (1465.5 us). The recorded margin is 21.8%..."])

# --- 5. sweep.py: require_sdma's refusal (:199-216), and the occupancy note on stderr (:335, :357-362).
write("sweep_sdma_off.log", SWEEP + " :199-216", [
    "BUILD_CCO_SDMA is OFF -- the SDMA path is compiled out, numbers would be fiction. Rebuild with BUILD_CCO_SDMA=ON."])
grid = [(m, mode) for m in (4096, 8192, 16384) for mode in ("gemm-only", "split-sdma", "fused-sdma", "fused-lsa")]
out = ["# preset fused-fp8: %d points -> /work/mori/benchmark/cco/flydsl/gemm_ar/fused-fp8.jsonl" % len(grid),
       "# occupancy before: 0 0 0 0 GiB/card"]
for i, (m, mode) in enumerate(grid, 1):
    out += ["[%d/%d] m=%d mode=%s" % (i, len(grid), m, mode), "  ok"]
out += ["# occupancy after: 12 0 0 0 GiB/card",
        "# NOTE: occupancy moved across the sweep; a leftover process may have shared the GPU. Re-run before "
        "trusting these.", "",
        "all %d points ok -> /work/mori/benchmark/cco/flydsl/gemm_ar/fused-fp8.jsonl" % len(grid)]
write("sweep_occupancy_moved.log", SWEEP + " main(), :357-362 (stdout and stderr, 2>&1)", out)

# --- 6. the schedule worker's summary (:191-208, json.dumps without sort_keys), the wire reference's lines.
def summary(quant, scatter, gather, plans, worst, wires):
    return "RESULT_JSON " + json.dumps(dict(
        quant=quant, schedule="wo_b", scatter=scatter, gather=gather,
        plans=[dict(m=m, physical_m=p, chunks=c, slot=i) for i, (m, p, c) in enumerate(plans)],
        per_rank_max_rel_l2=worst, wire_checks=wires, graph_replay=True, changed_inputs=True, guards=True,
        window_bytes=744488960))


# W=8 blockscale bf16/bf16 wo_b: 8200 -> (9216, chunk_bands 2), 11264/13312 -> chunk_bands 1 (op.py _Schedule).
write("schedule_worker_bf16.log", SCHED + " :191-208", BANNER + [summary(
    "blockscale", "bf16", "bf16",
    [(4200, 5120, 5), (8200, 9216, 5), (11264, 11264, 11), (16384, 16384, 8), (13312, 13312, 13), (9216, 9216, 3)],
    [2.3611e-3, 2.3598e-3, 2.3605e-3, 2.3602e-3, 2.3609e-3, 2.3601e-3, 2.3606e-3, 2.3599e-3], [])])


def wire(m, reduce_rel=None):
    d = {"m": m}
    if reduce_rel is not None:  # an fp8 gather: check_wire's gather_stats (:123-127)
        d.update(wire_reduce_rel_l2=reduce_rel, wire_gather_scale_rel_l2=3.1e-08, wire_gather_midpoint_flips=12)
    d.update(wire_quant_rel_l2=1.8e-07, wire_collective_rel_l2=2.1e-06, wire_midpoint_flips=3,
             wire_scale_rel_l2=2.2e-08)  # :132-138
    return d


gwc = []
for m in (4200, 8200):  # print("GATHER_WIRE_CHECK", rank, gather_stats) on every rank (:126)
    for r in range(4):
        gwc.append("[rank%d]: GATHER_WIRE_CHECK %d {'wire_reduce_rel_l2': %r, 'wire_gather_scale_rel_l2': 3.1e-08, "
                   "'wire_gather_midpoint_flips': %d}" % (r, r, 1.2e-05 + 1e-7 * r, 10 + r))
write("schedule_worker_fp8.log", SCHED + " :159-208 and " + WIRE + " :126", BANNER + gwc + [summary(
    "mxfp8", "fp8", "fp8", [(4200, 4224, 5), (8200, 8256, 9), (11264, 11264, 1), (16384, 16384, 8)],
    [3.4812e-2, 3.4790e-2, 3.4805e-2, 3.4799e-2], [wire(4200, 1.2e-05), wire(8200, 1.3e-05)])])

# The replay gate failing on rank 3 (:147-157): relL2 2.0 is the previous sign's output.
write("schedule_worker_replay_failed.log", SCHED + " :147-157", BANNER + traceback(
    3, [("/work/mori/tests/python/cco/gemm_ar_schedule_worker.py", 157, "main",
         "assert error < limit, (rank, m, sign, error)")],
    "AssertionError: (3, 8200, -1, 2.0000001192092896)") + torchrun_failed("gemm_ar_schedule_worker.py", (3,)))
# The wire reference's collective check failing on rank 1 (:130-131).
write("wire_reference_failed.log", WIRE + " :130-131", BANNER + traceback(
    1, [("/work/mori/tests/python/cco/gemm_ar_wire_reference.py", 131, "check_wire",
         'raise RuntimeError(("collective beyond expected quantization", rank, comm_rel))')],
    "RuntimeError: ('collective beyond expected quantization', 1, 0.012345678901234568)") +
    torchrun_failed("gemm_ar_schedule_worker.py", (1,)))

# --- 7. the op worker @54e74a02 (_emit :105-107, sort_keys): run_all's cases, mxfp8 (:297-322) among them.
def emit(**record):
    return "RESULT_JSON " + json.dumps(record, sort_keys=True)


cases = [emit(case="scale_order", rel_l2=2.41e-3, flat_matches=True, physical_matches=True),
         emit(case="alternating_m_512_1024", first_small=2.40e-3, first_large=2.41e-3, again_small=2.40e-3,
              again_large=2.41e-3),
         emit(case="alternating_m_2048_4096", first_small=2.41e-3, first_large=2.40e-3, again_small=2.41e-3,
              again_large=2.40e-3),
         emit(case="changing_data", **{"call%d" % i: 2.40e-3 + 1e-5 * i for i in range(5)}),
         emit(case="self_test", passes_on_working_stack=True, detects_missing_scatter=True),
         emit(case="mxfp8", rel_l2=2.33e-3, m=2 * 256),
         emit(case="close", refused_after_close=True)]
write("op_worker.log", WORKER + " :105-107, run_all", BANNER + cases)
# alternating_m with its row report (:195-207): m=1024's first call holds peer 1's m=512 scatter payload in rows
# 512..767 (test_gemm_ar_op.py @1531cfe8's docstring: "4 runs in 8, always the same value"); mxfp8 returning NaN.
write("op_worker_failed.log", WORKER + " :195-212, :317-322", BANNER + [
    emit(case="alternating_m_512_1024", first_small=2.40e-3, first_large=0.3536, again_small=2.40e-3,
         again_large=2.41e-3, first_large_rows={"bad_rows": 256, "m": 1024, "first_bad": 512, "last_bad": 767,
                                                "contiguous": True, "matches_previous_scatter": True,
                                                "max_abs_diff_vs_stale": 0.0}),
    emit(case="mxfp8", rel_l2=float("nan"), m=512)])

# --- 8. op.py's self_test on a NaN output: `if not worst <= 1e-2` fails, and its message appends the SDMA-build hint
# whatever the cause.
msg = ("gemm_ar self-test failed: the all-reduce returned nan where 36 was expected (worst relative error nan at "
       "M=5120, world_size=8). Check that mori was built with BUILD_CCO_SDMA=ON and that MORI_ENABLE_SDMA=1 is set: "
       "without either, every put silently does nothing.")
tb = []
for r in (0, 1):
    tb += traceback(r, [("/work/mori/tests/python/cco/gemm_ar_schedule_worker.py", 99, "main",
                         "op.self_test(4200)")], "RuntimeError: " + msg)
write("self_test_nan.log", OP, BANNER + tb + torchrun_failed("gemm_ar_schedule_worker.py"))

# --- 9. an mxfp8 run whose output holds NaN: every rank prints relL2=nan (:540-541).
d = result("fused-sdma", 16384, 760.2, float("nan"), w=4, n=5120, quant="mxfp8", validated=False)
write("mxfp8_nan.log", BENCH + " :540-541", BANNER +
      ["[rank %d] VALIDATION FAILED relL2=nan" % r for r in range(4)] + [rj(d), human(d)] +
      torchrun_failed("bench_gemm_ar.py"))

# --- 10. a record measured on other hardware, judged against the default profile (no profile field, no device).
d = result("fused-sdma", 16384, 45307.0, 2.3509e-3)
write("other_hardware_no_profile.log", BENCH + " :605 (the times of another machine)", [rj(d)])
