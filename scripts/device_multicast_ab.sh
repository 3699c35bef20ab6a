#!/usr/bin/env bash
# On the lent GPU, one call (prepared 2026-12-06, not yet run): A shared by TMA multicast across clusters of two
# CTAs along N (GEMMAR_GEMM_KERNEL=wgmma4mc, gemm_wgmma4_kernel<16, 2, false, 2>) against the default wgmma4, both
# from one build carried as .dev/mc with .dev/lib (docs/kernels.md "Building"). Stages, each only while time is
# left: the GEMM alone at K = 2048 beside cuBLASLt, the two variants alternating, two processes each; eight GEMMs at
# once; wgmma4mc end to end (bit-exact); ncu's duration, instructions, tensor pipe and L2 figures of both at 16384.
# Output: $OUT/mc.tgz.
set -u
export LD_LIBRARY_PATH=$PWD/.dev/lib:${LD_LIBRARY_PATH:-}
D=${OUT:?}/mc; mkdir -p $D
B=.dev/mc/gemmar_gpu_bench G=.dev/mc/gemmar NCU=${NCU:-/usr/local/cuda/bin/ncu}
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,memory.total,power.limit --format=csv; } | tee $D/machine.txt
pack() { (cd $OUT && tar czf mc.tgz mc); }
left() { (( SECONDS < $1 )); }
S() { python3 scripts/e2e_summary.py "$@" | cut -c1-300; }
for rep in 1 2; do for v in wgmma4 wgmma4mc; do for mnk in "4096 7168 2048" "8192 7168 2048" "16384 7168 2048" \
  "4096 5120 2048" "16384 5120 2048"; do
  GEMMAR_GEMM_KERNEL=$v timeout 30 $B gemm $mnk blockscale 2>&1 | grep -E "GEMM_JSON|rror" | sed "s/^/$v $mnk /"
done; done; done | tee $D/gemm.log | cut -c1-260
pack
if left 150; then for v in wgmma4 wgmma4mc; do
  GEMMAR_GEMM_KERNEL=$v timeout 40 $B gemm-concurrent 16384 7168 2048 8 2>&1 | grep -E "JSON|rror" | sed "s/^/$v /"
done; fi | tee $D/concurrent.log
pack
one() { GEMMAR_GEMM_KERNEL=wgmma4mc timeout 60 $G run --backend gpu "$@" --json > $D/one.json 2>> $D/e2e.err; echo "wgmma4mc $* rc=$? $(S $D/one.json | cut -c1-250)"; }
if left 190; then
  one -m 4096 --mode gemm-only
  one -m 4096 --mode fused-sdma --gather-dtype bf16
  left 220 && { GEMMAR_GEMM_KERNEL=wgmma4mc timeout 80 $G run --backend gpu --all-configs -m 16384 --json > $D/e2e_mc16384.json 2>> $D/e2e.err; echo "== e2e 16384 rc=$?"; S $D/e2e_mc16384.json; }
fi | tee $D/e2e.txt
pack
if left 300; then for v in wgmma4 wgmma4mc; do
  GEMMAR_GEMM_KERNEL=$v timeout -s KILL 60 "$NCU" --metrics 'gpu__time_duration.sum,smsp__inst_executed.sum,regex:^sm__pipe_tensor.*pct_of_peak_sustained_elapsed$,regex:^lts__t_sectors_srcunit_tex_op_read.sum$,regex:^lts__throughput.avg.pct_of_peak_sustained_elapsed$' \
    -k regex:gemm_wgmma4 --launch-skip 2 --launch-count 1 $B gemm 16384 7168 2048 > $D/ncu_$v.txt 2>&1
  echo "== ncu $v rc=$?"; grep -E "^    [a-z]|==ERR" $D/ncu_$v.txt | head -12
done; fi
echo "t=$SECONDS"; tail -3 $D/e2e.err 2>/dev/null; date -u
pack; rm -rf $D
