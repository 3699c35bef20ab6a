#!/usr/bin/env bash
# Session 5: after the kernels/ by-concern merge (issue 26): the same verdicts as session 3 on the H200.
export LD_LIBRARY_PATH=$PWD/.dev/lib:/usr/local/cuda/lib64
export GEMMAR_CACHE_DIR=/tmp/gemmar-cache
G=$PWD/.dev/bin/gemmar
s=$(date +%s)
timeout 150 $G validate --backend gpu --baseline .dev/baseline_session3.json --out /tmp/v --no-report > $OUT/validate.log 2>&1; echo "validate rc=$? $(( $(date +%s) - s )) s" | tee -a $OUT/validate.log
cp /tmp/v/results.json $OUT/results.json 2>/dev/null
timeout 120 scripts/device_verify_run.sh $G $OUT/verify > /tmp/verify.log 2>&1; echo "verify rc=$? $(( $(date +%s) - s )) s"
cat $OUT/verify/summary.txt
{
  for a in "--quant ptpc --all-configs -m 4096" "--quant mxfp8 --all-configs -m 1000" \
           "--mode fused-sdma --gather-dtype bf16 -m 4096 --guard" "--mode fused-sdma --gather-dtype fp8 --gather-transport sdma -m 4096 --guard" \
           "--mode fused-sdma --gather-dtype fp8 --gather-transport sdma -m 4096 --guard --inject silent-gather" \
           "--mode fused-sdma --gather-dtype bf16 -m 4096 --guard --inject perturb-rank=1"; do
    echo "\$ gemmar run --backend gpu $a"
    timeout 100 $G run --backend gpu $a 2>&1 | grep -v "^RESULT_JSON"
    echo "rc=${PIPESTATUS[0]}"
  done
} > $OUT/runs.log 2>&1
echo "runs $(( $(date +%s) - s )) s"
grep -E '^\$|^rc=|GUARD_' $OUT/runs.log | cut -c1-220
tail -4 $OUT/validate.log
