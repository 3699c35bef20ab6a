#!/usr/bin/env bash
# On the lent GPU, one call (2026-12-06): is the GEMM gap to cuBLASLt at 16384 x 7168 x 2048 cycles or clock?
# (1) gemm at GEMMAR_BENCH_ITERS 20 and 500 with nvidia-smi sampling the SM clock and power every 20 ms (in each
# process ours runs first, then cuBLASLt); (2) ncu, which locks the clock, on ours and on cuBLASLt's kernel in
# the same process. Build carried as .dev/mc. Output: $OUT/clock.tgz.
set -u
export LD_LIBRARY_PATH=$PWD/.dev/lib:${LD_LIBRARY_PATH:-}
D=${OUT:?}/clock; mkdir -p $D
B=.dev/mc/gemmar_gpu_bench NCU=${NCU:-/usr/local/cuda/bin/ncu}
{ date -u; nvidia-smi --query-gpu=name,driver_version,memory.total,power.limit,clocks.max.sm --format=csv; } | tee $D/machine.txt
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv,noheader -lms 20 > $D/smi.csv &
SMI=$!
for it in 20 500; do for v in ${VARIANTS:-wgmma4 wgmma4mcown}; do
  echo "$(date -u +%T.%N) start $v iters=$it" >> $D/marks.txt
  GEMMAR_BENCH_ITERS=$it GEMMAR_GEMM_KERNEL=$v timeout 60 $B gemm 16384 7168 2048 2>&1 | grep -E "GEMM_JSON|rror" | sed "s/^/$v $it /" >> $D/gemm.log
  echo "$(date -u +%T.%N) end $v" >> $D/marks.txt
done; done
kill $SMI
grep -o '^[a-z0-9]* [0-9]* \|"ours_us": [0-9.]*\|"cublaslt_us": [0-9.]*\|"ratio": [0-9.]*' $D/gemm.log | paste -d' ' - - - -
M='gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second,sm__cycles_elapsed.max,smsp__inst_executed.sum,sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed,lts__throughput.avg.pct_of_peak_sustained_elapsed,dram__throughput.avg.pct_of_peak_sustained_elapsed'
for k in "wgmma4 gemm_wgmma4" "wgmma4mcown gemm_wgmma4" "wgmma4 nvjet"; do set -- $k
  GEMMAR_GEMM_KERNEL=$1 timeout -s KILL 60 "$NCU" --metrics $M -k regex:$2 --launch-skip 2 --launch-count 1 $B gemm 16384 7168 2048 > $D/ncu_$1_$2.txt 2>&1
  echo "== ncu $1 $2 rc=$?"; grep -E "^    [a-z]" $D/ncu_$1_$2.txt
done
echo "t=$SECONDS"; date -u
(cd $OUT && tar czf clock.tgz clock) && rm -rf $D
