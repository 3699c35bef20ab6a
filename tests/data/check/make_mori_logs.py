# Writes tests/data/check/mori/: the shapes ROCm/mori's own code prints (issue 27), each from the print statement
# it copies, named with its file and commit below and in the file's first line (JSON files, which cannot hold a
# comment, are listed in mori/SOURCES.md). Values are made up; formats are mori's. Run: python3 make_mori_logs.py
import json, os

D = os.path.join(os.path.dirname(os.path.abspath(__file__)), "mori") + "/"
os.makedirs(D, exist_ok=True)
BENCH = "benchmark/cco/flydsl/gemm_ar/bench_gemm_ar.py"
BENCH_NOW = BENCH + " @fc89289489cc43fd5451df04f24676afcdd18e14"   # has quant, DEFAULT_CHUNKS = 8
BENCH_OLD = BENCH + " @0b26ebf8f2278e82ea3522f2708e7d693e18f487"   # no quant (ptpc only), chunks pinned to 1
SWEEP = "benchmark/cco/flydsl/gemm_ar/sweep.py @4488353a821c4ab739c667484f4dafbf149d8b36"
WORKER = "tests/python/cco/gemm_ar_op_worker.py @1531cfe8ddd23abed2897182b7cc73ccf73b11c3"
OP = "python/mori/ops/gemm_ar/op.py (self_test, as indexed; RuntimeError text verbatim)"
TEST = "tests/python/cco/test_gemm_ar.py @72c47dee6294508a3ff84467cfe978f93dcd5a6f"

BANNER = ["W1203 10:14:01.123000 4242 torch/distributed/run.py:793] *****************************************"]


def write(name, source, lines):
    with open(D + name, "w") as f:
        f.write("# shape: ROCm/mori %s\n" % source)
        f.write("\n".join(lines) + "\n")


def result_now(mode, m, t, rel, w=8, quant="blockscale", validated=True, **kw):
    """bench_gemm_ar.py @fc892894 `result` dict (rank 0)."""
    fused = mode.startswith("fused")
    per = [round(t - 0.3 * ((r * 7) % 5), 2) for r in range(w)]
    per[0] = t
    d = {"mode": mode, "world_size": w, "m": m, "n": 7168, "k": 2048, "quant": quant,
         "block_m": 128 if quant == "blockscale" else 256, "block_n": 256,
         "chunks": 8 if fused else None, "tile_order": "auto", "swap_ab": True, "permlane": True,
         "lane_transpose": True, "fence": "none" if fused else None, "stop_after": "all",
         "max_rank_time_us": t, "critical_rank": 0, "per_rank_time_us": per, "rel_l2": rel,
         "validated": validated, "timing": "graph", "gemm_impl": "8wave", "tile": None}
    d.update(kw)
    return d


def result_old(mode, m, t, rel, chunks=1, fence="none", validated=True):
    """bench_gemm_ar.py @0b26ebf8 `result` dict: no quant, no gemm_impl."""
    fused = mode.startswith("fused")
    per = [round(t - 0.2 * r, 2) for r in range(8)]
    return {"mode": mode, "world_size": 8, "m": m, "n": 7168, "k": 1024, "block_m": 256, "block_n": 256,
            "chunks": chunks if fused else None, "tile_order": "auto", "swap_ab": False,
            "fence": fence if fused else None, "stop_after": "all", "max_rank_time_us": t, "critical_rank": 0,
            "per_rank_time_us": per, "rel_l2": rel, "validated": validated, "timing": "graph"}


def rj(d):  # print("RESULT_JSON " + json.dumps(result, sort_keys=True), flush=True)
    return "RESULT_JSON " + json.dumps(d, sort_keys=True)


def human(d):  # the [gemm_ar] summary print right after it
    return "[gemm_ar] mode=%s m=%d n=%d k=%d max_rank_time=%.2fus relL2=%.2e validated=%s" % (
        d["mode"], d["m"], d["n"], d["k"], d["max_rank_time_us"], d["rel_l2"], d["validated"])


def torchrun_child_failed(script, pid=4250):
    """torchrun's report of a rank that returned 1: its own traceback ending in ChildFailedError, and the summary."""
    return [
        "E1203 10:14:55.123000 4242 torch/distributed/elastic/multiprocessing/api.py:869] failed (exitcode: 1) "
        "local_rank: 0 (pid: %d) of binary: /opt/venv/bin/python3" % pid,
        "Traceback (most recent call last):",
        '  File "<frozen runpy>", line 198, in _run_module_as_main',
        '  File "/opt/venv/lib/python3.12/site-packages/torch/distributed/run.py", line 922, in <module>',
        "    main()",
        '  File "/opt/venv/lib/python3.12/site-packages/torch/distributed/launcher/api.py", line 263, in launch_agent',
        "    raise ChildFailedError(",
        "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ",
        "============================================================",
        "%s FAILED" % script,
        "------------------------------------------------------------",
        "Failures:",
        "  <NO_OTHER_FAILURES>",
        "------------------------------------------------------------",
        "Root Cause (first observed failure):",
        "[0]:",
        "  time      : 2026-12-03_10:14:55",
        "  host      : mi355x-node",
        "  rank      : 0 (local_rank: 0)",
        "  exitcode  : 1 (pid: %d)" % pid,
        "  error_file: <N/A>",
        "  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html",
        "============================================================",
    ]


# --- sweep.py stdout: main() prints `# preset`, `[i/N] desc`, `  ok` / `  FAILED: <last line>`, the summary.
def sweep_stdout(failures):
    grid = [(m, mode) for m in (4096, 8192, 16384)
            for mode in ("gemm-only", "split-sdma", "split-lsa", "fused-sdma", "fused-lsa")]
    out = ["# preset fused: %d points -> /work/mori/benchmark/cco/flydsl/gemm_ar/fused.jsonl" % len(grid),
           "# occupancy before: 0 0 0 0 GiB/card"]
    failed = []
    for i, (m, mode) in enumerate(grid, 1):
        desc = "m=%d mode=%s" % (m, mode)
        out.append("[%d/%d] %s" % (i, len(grid), desc))
        if i in failures:
            failed.append(desc)
            out.append("  FAILED: %s" % failures[i])
        else:
            out.append("  ok")
    out.append("# occupancy after: 0 0 0 0 GiB/card")
    if failed:
        out += ["", "%d of %d points FAILED:" % (len(failed), len(grid))] + ["  " + d for d in failed]
    else:
        out += ["", "all %d points ok -> /work/mori/benchmark/cco/flydsl/gemm_ar/fused.jsonl" % len(grid)]
    return out


write("sweep_failed.stdout", SWEEP, sweep_stdout({
    2: "TIMEOUT after 1800s",
    7: "hsaKmtCreateQueueExt failed: anvil.cpp:237",
    14: "no RESULT_JSON emitted"}))
write("sweep_ok.stdout", SWEEP, sweep_stdout({}))

# --- sweep.py's .jsonl: run_point() adds label, the point's axes and sweep_axes to each RESULT_JSON (json.dumps).
with open(D + "sweep_fused.jsonl", "w") as f:
    for m in (4096, 16384):
        for mode, t in (("split-sdma", 0.30), ("fused-sdma", 0.26)):
            d = json.loads(json.dumps(result_now(mode, m, round(t * m / 4.0, 1), 2.3512e-3, w=4, n=5120,
                                                 quant="mxfp8"), sort_keys=True))
            d["n"] = 5120
            d["label"] = "mxfp8"
            d.update({"mode": mode})
            d["sweep_axes"] = sorted({"m": m, "mode": mode})
            f.write(json.dumps(d) + "\n")

# --- --json-out: json.dump(result, fh, indent=2, sort_keys=True), and a JSON array of such records.
with open(D + "json_out.json", "w") as f:
    json.dump(result_now("fused-sdma", 16384, 1146.2, 2.3509e-3), f, indent=2, sort_keys=True)
with open(D + "records_array.json", "w") as f:
    json.dump([result_now("split-sdma", 16384, 1465.5, 2.3512e-3),
               result_now("fused-sdma", 16384, 1146.2, 2.3509e-3)], f, indent=2, sort_keys=True)

# --- per-rank verdicts before rank 0's RESULT_JSON; rank 0 then returns 1 and torchrun reports it.
d = result_now("fused-sdma", 16384, 1151.0, 2.3509e-3, validated=False)
write("rank_validation_failed.log", BENCH_NOW, BANNER + [
    "[rank 3] VALIDATION FAILED relL2=4.123e-03",
    "[rank 5] VALIDATION FAILED relL2=5.870e-03",
    rj(d), human(d)] + torchrun_child_failed("bench_gemm_ar.py"))

# gemm-only validates each rank's own partial; 0.26 is the A scale read in the wrong order.
d = result_now("gemm-only", 16384, 388.5, 2.612e-1, validated=False)
write("gemm_only_scale_order.log", BENCH_NOW,
      ["[rank %d] GEMM VALIDATION FAILED relL2=%.3e" % (r, 0.2612 + 0.0004 * r) for r in range(8)] +
      [rj(d), human(d)] + torchrun_child_failed("bench_gemm_ar.py"))

# --- the op worker's records, one per case from rank 0 (_emit: "RESULT_JSON " + json.dumps(record, sort_keys=True)).
def worker_records(scale_rel=2.41e-3, detects=True):
    return [
        {"case": "scale_order", "rel_l2": scale_rel, "flat_matches": True, "physical_matches": True},
        {"case": "alternating_m_512_1024", "first_small": 2.40e-3, "first_large": 2.41e-3,
         "again_small": 2.40e-3, "again_large": 2.41e-3},
        {"case": "alternating_m_2048_4096", "first_small": 2.41e-3, "first_large": 2.40e-3,
         "again_small": 2.41e-3, "again_large": 2.40e-3},
        {"case": "changing_data", "call0": 2.40e-3, "call1": 2.41e-3, "call2": 2.39e-3, "call3": 2.40e-3,
         "call4": 2.41e-3},
        {"case": "self_test", "passes_on_working_stack": True, "detects_missing_scatter": detects},
        {"case": "close", "refused_after_close": True},
    ]


write("op_worker.log", WORKER, BANNER + [rj(r) for r in worker_records()])
write("op_worker_failed.log", WORKER, BANNER + [rj(r) for r in worker_records(scale_rel=0.2604, detects=False)])

# --- op.py self_test() raising under torchrun: [rankN]: prefixed traceback, then torchrun's report.
msg = ("gemm_ar self-test failed: the all-reduce returned 1 where 3 was expected (worst relative error 0.667 at "
       "M=1024, world_size=2). mori was built with BUILD_CCO_SDMA=OFF (the default), so the SDMA puts are "
       "compiled out and do nothing.")
tb = []
for r in (0, 1):
    tb += ["[rank%d]: Traceback (most recent call last):" % r,
           '[rank%d]:   File "/work/serve/warmup.py", line 41, in <module>' % r,
           "[rank%d]:     op.self_test()" % r,
           '[rank%d]:   File "/opt/venv/lib/python3.12/site-packages/mori/ops/gemm_ar/op.py", line 612, in self_test' % r,
           "[rank%d]:     raise RuntimeError(" % r,
           "[rank%d]: RuntimeError: %s" % (r, msg)]
write("self_test_runtime_error.log", OP, BANNER + tb + torchrun_child_failed("warmup.py"))

# --- pytest -vv: test_gemm_ar.py's _run_bench asserts returncode == 0 with the output; -vv shows the local
# `result = CompletedProcess(...)` repr, whose stdout quotes the RESULT_JSON and [gemm_ar] lines.
ok = result_now("split-sdma", 512, 61.3, 2.3512e-3, w=2)
ok.update({"n": 1024, "k": 256, "per_rank_time_us": [61.3, 61.1]})
bad = dict(ok, mode="fused-sdma", chunks=1, fence="none", rel_l2=3.97e-3, validated=False)
repr_stdout = (rj(bad) + "\\n" + human(bad) + "\\n")
write("pytest_repr.log", TEST, [
    "============================= test session starts ==============================",
    rj(ok), human(ok),
    "tests/python/cco/test_gemm_ar.py::test_gemm_ar_modes_agree[fused-sdma] FAILED",
    "=================================== FAILURES ===================================",
    "E       AssertionError: assert 1 == 0",
    "E        +  where 1 = CompletedProcess(args=['/opt/venv/bin/python3', '-m', 'torch.distributed.run'], "
    "returncode=1, stdout='" + repr_stdout + "', stderr='').returncode",
    "=========================== short test summary info ============================",
    "FAILED tests/python/cco/test_gemm_ar.py::test_gemm_ar_modes_agree[fused-sdma] - assert 1 == 0"])

# --- pytest -s prints of its own: not the benchmark's summary (no n, k, validated).
write("pytest_human.log", TEST + " (the print quoted in issue 27)", [
    "tests/python/cco/test_gemm_ar.py::test_gemm_ar_modes_agree[fused-sdma]",
    "[gemm_ar] fused-sdma  m=4096 quant=blockscale  1148.8 us relL2=2.36e-03",
    "[gemm_ar] split-sdma  m=4096 quant=blockscale  1465.5 us relL2=2.35e-03",
    "PASSED"])

# --- repeats (test_fused_is_stable_across_repeats runs the same config 3 times and compares with approx(rel=1e-6)).
clean = result_now("fused-sdma", 4096, 348.5, 2.3509e-3)
faulty = dict(clean, rel_l2=4.123e-3, validated=False)
write("repeats_one_faulty.log", BENCH_NOW, [rj(clean), rj(faulty), rj(clean)])
write("repeats_clean_differ.log", BENCH_NOW, [rj(clean), rj(dict(clean, rel_l2=2.3512e-3))])
write("repeats_within_tolerance.log", BENCH_NOW, [rj(clean), rj(dict(clean, rel_l2=2.3509e-3 * (1 + 4e-7)))])

# --- racy configurations by version.
write("racy_by_version.log", BENCH_OLD + " and " + BENCH_NOW, [
    rj(result_old("fused-sdma", 4096, 341.0, 2.3509e-3, chunks=2)),       # old: chunks > 1 was racy
    rj(result_now("fused-sdma", 16384, 1146.2, 2.3509e-3)),               # now: chunks 8, fence none, fixed
    rj(result_now("fused-lsa", 16384, 1365.6, 2.3509e-3, fence="raw-wt")),  # lsa: no copy engine
    rj(result_now("fused-sdma", 16384, 1140.0, 2.3509e-3, fence="raw-wt-agent"))])  # raw-wt*: racy in every version

# --- an old baseline (no quant: ptpc) and a current blockscale run of the same shape and config.
write("baseline_old_ptpc.log", BENCH_OLD, [rj(result_old("split-sdma", 16384, 1261.7, 2.3512e-3))])
cur = result_now("split-sdma", 16384, 1465.5, 2.3512e-3)
cur.update({"k": 1024, "block_m": 256})
write("blockscale_vs_old.log", BENCH_NOW, [rj(cur)])

# --- the keys of mori's committed sweep results (benchmark/cco/flydsl/gemm_ar/sweep_dsv41.jsonl @9aaef3e9):
# later bench versions add atomic_order, publish, gather_bands, fuse_reduce_push, resolved_tile_order,
# sdma_queues; sweep.py adds label. Values made up.
with open(D + "committed_sweep_keys.jsonl", "w") as f:
    for mode, t, rel, chunks, fence, order in (("gemm-only", 370.9, 1.6577e-3, None, None, "linear"),
                                               ("fused-sdma", 1142.8, 2.3504e-3, 8, "none", "rotated")):
        d = result_now(mode, 16384, t, rel, chunks=chunks, fence=fence)
        for k in ("gemm_impl", "tile"):
            del d[k]
        d.update({"atomic_order": "acq_rel", "publish": "writethrough", "gather_bands": 8, "fuse_reduce_push": False,
                  "gather_dtype": "bf16", "gather_transport": "sdma", "fuse_quantize": False,
                  "resolved_tile_order": order, "sdma_queues": 8})
        f.write(json.dumps(d, sort_keys=True)[:-1] + ', "label": "pro-tp8"}\n')
# --- rank lines, then rank 0 dies before its RESULT_JSON: no finished run, so its exit 1 is a failure.
write("rank_lines_then_crash.log", BENCH_NOW, [
    "[rank 3] VALIDATION FAILED relL2=4.123e-03"] + torchrun_child_failed("bench_gemm_ar.py"))
