# Writes the real-shaped benchmark logs of tests/data/check (docs/check.md): torchrun banners, [rankN]: prefixes,
# ANSI colours, sort_keys JSON, older versions, crashes. Run from anywhere: python3 make_logs.py
import json, random, os
D=os.path.dirname(os.path.abspath(__file__))+'/'
random.seed(5)
RED='\x1b[31m'; GREEN='\x1b[1;32m'; RESET='\x1b[0m'; BOLD='\x1b[1m'
def per_rank(mx, jitter=2.0, crit=0):
    t=[round(mx - random.uniform(0.2, jitter),1) for _ in range(8)]
    t[crit]=mx
    return t
def result(mode, m, t, rel, crit=0, w=8, **kw):
    pr=per_rank(t, crit=crit)
    d={"mode":mode,"world_size":w,"m":m,"n":7168,"k":2048,"block_m":256,"block_n":256,
       "chunks":1 if mode.startswith('fused') else None,"tile_order":"auto",
       "fence":"agent" if mode.startswith('fused') else None,"stop_after":"all",
       "max_rank_time_us":t,"critical_rank":crit,"per_rank_time_us":pr,"rel_l2":rel,"validated":True,"timing":"graph"}
    d.update(kw)
    return d
def rj(d): return "RESULT_JSON "+json.dumps(d, sort_keys=True)
def human(d):
    return "[gemm_ar] mode=%s m=%d n=%d k=%d max_rank_time=%.2fus relL2=%.2e validated=%s"%(d["mode"],d["m"],d["n"],d["k"],d["max_rank_time_us"],d["rel_l2"],d["validated"])
banner=["W0602 10:14:01.123000 4242 torch/distributed/run.py:793] ",
"W0602 10:14:01.123000 4242 torch/distributed/run.py:793] *****************************************",
"W0602 10:14:01.123000 4242 torch/distributed/run.py:793] Setting OMP_NUM_THREADS environment variable for each process to be 1 in default, to avoid your system being overloaded, please further tune the variable for optimal performance in your application as needed. ",
"W0602 10:14:01.123000 4242 torch/distributed/run.py:793] *****************************************"]

# 1. every rank prints every line, with colour
L=list(banner)
runs=[result("split-sdma",16384,1472.9,2.3512e-3, crit=0, gather_dtype="bf16", gather_transport="sdma", quant="blockscale"),
      result("fused-sdma",16384,1148.8,2.3509e-3, crit=3, gather_dtype="bf16", gather_transport="sdma", quant="blockscale"),
      result("fused-sdma",16384,957.3,2.4903e-2, crit=5, gather_dtype="fp8", gather_transport="lsa", quant="blockscale")]
for r in range(8):
    L.append("[rank%d]: %s/opt/venv/lib/python3.10/site-packages/torch/cuda/__init__.py:716: UserWarning: Can't initialize amdsmi - Error code: 34%s"%(r,RED if r%2 else '',RESET if r%2 else ''))
for d in runs:
    order=list(range(8)); random.shuffle(order)
    for r in order:
        if r%3==0: L.append("[rank%d]: %s%s%s"%(r,GREEN,rj(d),RESET))
        elif r%3==1: L.append("[rank%d]: %sRESULT_JSON%s %s"%(r,BOLD,RESET,json.dumps(d,sort_keys=True)))
        else: L.append("[rank%d]: %s"%(r,rj(d)))
    for r in order:
        L.append("[rank%d]: %s"%(r, human(d)))
L.append("[rank0]: done")
open(D+'torchrun_all_ranks.log','w').write("\n".join(L)+"\n")

# 2. an older benchmark: no world_size, no wire fields; and one run known only from its [gemm_ar] line
L=list(banner)
old=[]
for d in [result("split-sdma",16384,1471.6,2.3512e-3), result("fused-sdma",16384,1149.2,2.3509e-3, crit=2)]:
    d=dict(d); del d["world_size"]; del d["critical_rank"]; del d["stop_after"]
    L.append(rj(d)); L.append(human(d))
L.append("[gemm_ar] mode=split-lsa m=16384 n=7168 k=2048 max_rank_time=1180.40us relL2=2.35e-03 validated=True")
open(D+'old_benchmark.log','w').write("\n".join(L)+"\n")

# 3. a crash mid-log: two runs passed, then rank 3 raised, torchrun's summary
L=list(banner)
a=result("split-sdma",16384,1472.1,2.3512e-3); b=result("fused-sdma",16384,1148.1,2.3509e-3)
L += ["[rank0]: "+rj(a), "[rank0]: "+human(a), "[rank0]: "+rj(b), "[rank0]: "+human(b)]
L += ["[rank3]: Traceback (most recent call last):",
"[rank3]:   File \"/work/mori/benchmark/cco/flydsl/gemm_ar/bench_gemm_ar.py\", line 402, in <module>",
"[rank3]:     sys.exit(run(build_parser().parse_args()))",
"[rank3]:   File \"/work/mori/benchmark/cco/flydsl/gemm_ar/bench_gemm_ar.py\", line 231, in run",
"[rank3]:     torch.cuda.synchronize()",
"[rank3]: RuntimeError: HIP error: an illegal memory access was encountered",
"W0602 10:16:44.911000 4242 torch/distributed/elastic/multiprocessing/api.py:897] Sending process 4250 closing signal SIGTERM",
"W0602 10:16:44.912000 4242 torch/distributed/elastic/multiprocessing/api.py:897] Sending process 4251 closing signal SIGTERM",
"E0602 10:16:45.402000 4242 torch/distributed/elastic/multiprocessing/api.py:869] failed (exitcode: 1) local_rank: 3 (pid: 4253) of binary: /opt/venv/bin/python3",
"Traceback (most recent call last):",
"  File \"/opt/venv/bin/torchrun\", line 8, in <module>",
"    sys.exit(main())",
"torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ",
"============================================================",
"bench_gemm_ar.py FAILED",
"------------------------------------------------------------",
"Failures:",
"  <NO_OTHER_FAILURES>",
"------------------------------------------------------------",
"Root Cause (first observed failure):",
"[0]:",
"  time      : 2025-06-02_10:16:44",
"  host      : mi355x-node07",
"  rank      : 3 (local_rank: 3)",
"  exitcode  : 1 (pid: 4253)",
"  error_file: <N/A>",
"  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html",
"============================================================"]
open(D+'crashed_mid_log.log','w').write("\n".join(L)+"\n")

# 4. stale queues: a back-to-back rerun that could not create its copy-engine queues
L=list(banner)
a=result("fused-sdma",16384,1148.5,2.3509e-3)
L += ["[rank0]: "+rj(a)]
for r in (1,4,6):
    L.append("[rank%d]: :0:rocdevice.cpp            :2982: 1042851234 us: [pid:4312 tid:0x7f3a] hsaKmtCreateQueueExt failed with status -1 (HSAKMT_STATUS_ERROR)"%r)
L.append("[rank1]: mori.shmem ERROR: failed to create SDMA queue 3 for peer 5")
open(D+'stale_queues.log','w').write("\n".join(L)+"\n")

# 5. impossible values, one per line, each INVALID_RECORD naming its field
base=result("fused-sdma",16384,1148.8,2.3509e-3)
def var(**kw):
    d=dict(base); d.update(kw); return d
L=["# impossible values: each line names its field"]
L.append("RESULT_JSON "+json.dumps(var(max_rank_time_us=float('nan')),sort_keys=True))
L.append("RESULT_JSON "+json.dumps(var(max_rank_time_us=float('inf')),sort_keys=True))
L.append("RESULT_JSON "+json.dumps(var(max_rank_time_us=0.0, per_rank_time_us=None),sort_keys=True))
L.append("RESULT_JSON "+json.dumps(var(max_rank_time_us=-5.0, per_rank_time_us=None),sort_keys=True))
L.append("RESULT_JSON "+json.dumps(var(rel_l2=-2.35e-3),sort_keys=True))
L.append("RESULT_JSON "+json.dumps(var(per_rank_time_us=base["per_rank_time_us"][:7]),sort_keys=True))
L.append("RESULT_JSON "+json.dumps(var(max_rank_time_us=1200.0),sort_keys=True))
txt=json.dumps(base,sort_keys=True)
L.append("RESULT_JSON "+txt[:-1]+', "rel_l2": 0.5}')
L.append("RESULT_JSON "+json.dumps(var(critical_rank=4),sort_keys=True))
L.append("RESULT_JSON "+json.dumps(var(per_rank_time_us=[float('nan')]+base["per_rank_time_us"][1:]),sort_keys=True))
L.append("RESULT_JSON "+json.dumps(var(timing="cudagraph"),sort_keys=True))
L.append("RESULT_JSON "+json.dumps(var(stop_after="gather"),sort_keys=True))
open(D+'impossible_values.log','w').write("\n".join(L)+"\n")

# 6. what the run says about itself: partial, eager, racy fences
L=list(banner)
L.append("[rank0]: "+rj(result("fused-sdma",16384,668.4,float('nan'),stop_after="scatter")))
L.append("[rank0]: "+rj(result("split-sdma",16384,975.0,float('nan'),stop_after="scatter")))
L.append("[rank0]: "+rj(result("fused-sdma",16384,1166.9,2.3509e-3,timing="eager")))
L.append("[rank0]: "+rj(result("fused-sdma",16384,1147.9,2.3509e-3,fence="raw-wt")))
L.append("[rank0]: "+rj(result("fused-sdma",16384,1101.3,2.3509e-3,fence="none",chunks=4)))
open(D+'partial_eager_racy.log','w').write("\n".join(L)+"\n")

# 7. the same config three times, one of them different: a race that passed the threshold
L=list(banner)
for t,rel in ((1101.9,2.3509412e-3),(1102.4,2.3509412e-3),(1100.8,2.4187033e-3)):
    L.append("[rank0]: "+rj(result("fused-sdma",16384,t,rel,fence="agent",chunks=1)))
for t in (1472.4,1471.1):
    L.append("[rank0]: "+rj(result("split-sdma",16384,t,2.3511873e-3)))
open(D+'repeats.log','w').write("\n".join(L)+"\n")

# 8. a run far under the model yet above the lower bound
L=["[rank0]: "+rj(result("fused-sdma",16384,842.0,2.3509e-3))]
open(D+'faster_than_model.log','w').write("\n".join(L)+"\n")
