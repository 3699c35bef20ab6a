#!/usr/bin/env bash
# On the lent GPU, one call (2026-12-06): L2 traffic of our GEMM variants and cuBLASLt's at 16384 x 7168 x 2048
# (ncu, clocks locked): does the A multicast (wgmma4mc) read A from L2 once per cluster? Build carried as .dev/mc.
set -u
export LD_LIBRARY_PATH=$PWD/.dev/lib:${LD_LIBRARY_PATH:-}
D=${OUT:?}/l2; mkdir -p $D
B=.dev/mc/gemmar_gpu_bench NCU=${NCU:-/usr/local/cuda/bin/ncu}
date -u > $D/machine.txt; nvidia-smi --query-gpu=name,driver_version --format=csv >> $D/machine.txt
M='gpu__time_duration.sum,sm__cycles_elapsed.max,lts__t_sectors_srcunit_tex_op_read.sum,lts__t_sectors_op_read.sum,lts__t_sectors.sum,lts__t_requests_srcunit_tex_op_read.sum,lts__throughput.avg.pct_of_peak_sustained_elapsed,lts__t_sectors_srcunit_tex_op_read_lookup_hit.sum,dram__bytes_read.sum,sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed'
IFS=, read -ra runs <<< "${L2_RUNS:-wgmma4 gemm_wgmma4,wgmma4mc gemm_wgmma4,wgmma4mcown gemm_wgmma4,wgmma4mcl0 gemm_wgmma4,wgmma4 nvjet}"
for k in "${runs[@]}"; do set -- $k
  GEMMAR_GEMM_KERNEL=$1 timeout -s KILL 60 "$NCU" --metrics $M -k regex:$2 --launch-skip 2 --launch-count 1 $B gemm ${SHAPE:-16384 7168 2048} > $D/ncu_$1_$2.txt 2>&1
  echo "== ncu $1 $2 rc=$?"; grep -E "^    [a-z]" $D/ncu_$1_$2.txt | awk '{print $1, $NF}'
done
echo "t=$SECONDS"; date -u
(cd $OUT && tar czf l2.tgz l2) && rm -rf $D
