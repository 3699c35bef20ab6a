#!/usr/bin/env bash
# Session 6, call 3: the guard's GEMM check rewritten (kernels/check/guard.cu): old binary vs new, same call.
export LD_LIBRARY_PATH=$PWD/.dev/lib:/usr/local/cuda/lib64
export GEMMAR_CACHE_DIR=/tmp/gemmar-cache
NEW=$PWD/.dev/bin/gemmar OLD=$PWD/.dev/bin_old/gemmar
D=$OUT/guardgemm; mkdir -p $D
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv; } > $D/machine.txt
s=$(date +%s)
FP8S="--mode fused-sdma --gather-dtype fp8 --gather-transport sdma"
BF16="--mode fused-sdma --gather-dtype bf16"
j() { local tag=$1 bin=$2; shift 2; echo "# $tag"; timeout 120 $bin run --backend gpu --json "$@" | tr -d '\n'; echo; echo "# rc=${PIPESTATUS[0]}"; }
{
  for rep in 1 2; do
    for b in OLD NEW; do
      bin=$OLD; [[ $b == NEW ]] && bin=$NEW
      GEMMAR_GUARD_PARTS=gemm j "part gemm $b fp8s 16384" $bin -m 16384 $FP8S --guard --iterations 21 --check-every 100
    done
  done
  for b in OLD NEW; do
    bin=$OLD; [[ $b == NEW ]] && bin=$NEW
    j "guard $b bf16 16384" $bin -m 16384 $BF16 --guard --iterations 21 --check-every 100
  done
  j "off bf16 16384" $NEW -m 16384 $BF16 --iterations 21 --check-every 100
  for q in ptpc mxfp8; do
    for b in OLD NEW; do
      bin=$OLD; [[ $b == NEW ]] && bin=$NEW
      j "clean $q $b bf16 4096" $bin -m 4096 --quant $q $BF16 --guard --iterations 6 --check-every 100
    done
    j "perturb $q NEW fp8s 4096" $NEW -m 4096 --quant $q $FP8S --guard --inject perturb-rank=1 --iterations 6 --check-every 100
  done
  j "perturb blockscale NEW bf16 4096" $NEW -m 4096 $BF16 --guard --inject perturb-rank=1 --iterations 6 --check-every 100
  j "clean blockscale NEW fp8s 4096 straggled" $NEW -m 4096 $FP8S --guard --iterations 300 --straggle 50 --check-every 1000
  j "clean blockscale NEW bf16 16384 straggled" $NEW -m 16384 $BF16 --guard --iterations 100 --straggle 50 --check-every 1000
} > $D/runs.jsonl 2>$D/stderr.log
echo "done $(( $(date +%s) - s )) s"
/usr/bin/python3 - $D/runs.jsonl <<'PY'
import json, sys
tag = None
for line in open(sys.argv[1]):
    line = line.strip()
    if line.startswith("# rc="): print("   rc", line[5:]); continue
    if line.startswith("# "): tag = line[2:]; continue
    if not line.startswith("{"): continue
    for run in json.loads(line).get("runs", []):
        r = run["record"]; g = r.get("guard", {}); p = r.get("phases_us", {})
        print("%-44s max %8.1f guard %7.1f calls %s flagged %s codes %s verdict %s" % (tag, r.get("max_rank_time_us", 0),
              p.get("guard", 0), g.get("calls"), g.get("flagged_calls"), list(g.get("codes", {}).keys()), run.get("verdict")))
PY
