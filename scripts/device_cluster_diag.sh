#!/usr/bin/env bash
# On the lent GPU, one call (2026-12-06): why wgmma4mc ran at half speed. Four cluster variants beside wgmma4, two
# processes each, at 4096 and 16384 x 7168 x 2048: A multicast with the warpgroups 2 K blocks apart (wgmma4mc) or in
# step (wgmma4mcl0), clusters releasing stages together with no A shared (wgmma4mcown), and plain wgmma4 launched in
# clusters of two (wgmma4c1). Then ncu's warp stall reasons of wgmma4 and wgmma4mc at 4096. Build carried as .dev/mc.
# VARIANTS and SHAPES ("M N K", comma-separated) override the lists; E2E=1 adds wgmma4mc end to end at 4096.
set -u
export LD_LIBRARY_PATH=$PWD/.dev/lib:${LD_LIBRARY_PATH:-}
D=${OUT:?}/diag; mkdir -p $D
B=.dev/mc/gemmar_gpu_bench NCU=${NCU:-/usr/local/cuda/bin/ncu}
{ date -u; nvidia-smi --query-gpu=name,driver_version,memory.total,power.limit --format=csv; } | tee $D/machine.txt
IFS=, read -ra shapes <<< "${SHAPES:-4096 7168 2048,16384 7168 2048}"
for rep in 1 2; do for v in ${VARIANTS:-wgmma4 wgmma4mc wgmma4mcl0 wgmma4mcown wgmma4c1}; do for mnk in "${shapes[@]}"; do
  GEMMAR_GEMM_KERNEL=$v timeout 30 $B gemm $mnk blockscale 2>&1 | grep -E "GEMM_JSON|rror" | sed "s/^/$v ${mnk%% *} /"
done; done; done > $D/gemm.log
grep -o '^[a-z0-9]* [0-9]* \|"ours_us": [0-9.]*\|"ours_rel_err": [0-9.]*\|"cublaslt_us": [0-9.]*' $D/gemm.log | paste -d' ' - - - -
if [ "${E2E:-0}" = 1 ]; then for mode in "gemm-only" "fused-sdma --gather-dtype bf16" "fused-lsa --gather-dtype fp8 --transport lsa"; do
  GEMMAR_GEMM_KERNEL=wgmma4mc timeout 60 .dev/mc/gemmar run --backend gpu -m 4096 --mode $mode --json > $D/e2e.json 2>> $D/e2e.err
  echo "wgmma4mc e2e $mode rc=$? $(python3 scripts/e2e_summary.py $D/e2e.json | cut -c1-220)"
done | tee $D/e2e.txt; fi
for v in ${NCU_VARIANTS:-wgmma4 wgmma4mc}; do
  GEMMAR_GEMM_KERNEL=$v timeout -s KILL 60 "$NCU" --section WarpStateStats --section LaunchStats --section Occupancy \
    --metrics sm__cycles_active.min,sm__cycles_active.max,sm__cycles_active.avg,sm__ctas_launched.min,sm__ctas_launched.max \
    -k regex:gemm_wgmma4 --launch-skip 2 --launch-count 1 $B gemm 4096 7168 2048 > $D/ncu_$v.txt 2>&1
  echo "== ncu $v rc=$?"; grep -E "memory barrier|Warp Cycles|Active Warps|cycles_active.avg" $D/ncu_$v.txt | head -8
done
echo "t=$SECONDS"; date -u
(cd $OUT && tar czf diag.tgz diag) && rm -rf $D
