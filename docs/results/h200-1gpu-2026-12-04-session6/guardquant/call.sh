#!/usr/bin/env bash
# Session 6, call 4: the device guard for ptpc and mxfp8 (A's scales by the quant's layout).
export LD_LIBRARY_PATH=$PWD/.dev/lib:/usr/local/cuda/lib64
export GEMMAR_CACHE_DIR=/tmp/gemmar-cache
NEW=$PWD/.dev/bin/gemmar
D=$OUT/guardquant; mkdir -p $D
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv; } > $D/machine.txt
s=$(date +%s)
FP8S="--mode fused-sdma --gather-dtype fp8 --gather-transport sdma"
BF16="--mode fused-sdma --gather-dtype bf16"
FP8L="--mode fused-lsa --gather-dtype fp8 --gather-transport lsa"
j() { local tag=$1; shift; echo "# $tag"; timeout 120 $NEW run --backend gpu --json "$@" | tr -d '\n'; echo; }
{
  for q in ptpc mxfp8; do
    j "clean $q bf16 4096 straggled" -m 4096 --quant $q $BF16 --guard --iterations 200 --straggle 50 --check-every 1000
    j "clean $q fp8s 4096 straggled" -m 4096 --quant $q $FP8S --guard --iterations 200 --straggle 50 --check-every 1000
    j "clean $q fp8l 16384" -m 16384 --quant $q $FP8L --guard --iterations 21 --check-every 100
    for f in perturb-rank=1 silent-scatter silent-gather stale-output no-release; do
      j "fault $f $q fp8s 4096" -m 4096 --quant $q $FP8S --guard --inject $f --iterations 6 --check-every 100
    done
    j "fault perturb-rank=1 $q bf16 4096" -m 4096 --quant $q $BF16 --guard --inject perturb-rank=1 --iterations 6 --check-every 100
  done
  GEMMAR_GUARD_PARTS=gemm j "part gemm blockscale fp8s 16384" -m 16384 $FP8S --guard --iterations 21 --check-every 100
} > $D/runs.jsonl 2>$D/stderr.log
echo "done $(( $(date +%s) - s )) s"; head -5 $D/stderr.log
/usr/bin/python3 - $D/runs.jsonl <<'PY'
import json, sys
tag = None
for line in open(sys.argv[1]):
    line = line.strip()
    if line.startswith("# "): tag = line[2:]; continue
    if not line.startswith("{"): print(tag, "NO RECORD"); continue
    for run in json.loads(line).get("runs", []):
        r = run["record"]; g = r.get("guard", {}); p = r.get("phases_us", {})
        print("%-36s max %8.1f guard %7.1f calls %s flagged %s codes %s wrong %s verdict %s" % (tag, r.get("max_rank_time_us", 0),
              p.get("guard", 0), g.get("calls"), g.get("flagged_calls"), {c: v.get("calls") for c, v in g.get("codes", {}).items()},
              r.get("wrong_elements"), run.get("verdict")))
PY
