#!/usr/bin/env bash
# k1024 (issue 25): K = 1024 on gemm_wgmma4_kernel<8, 2> (blockscale) / <8, 2, true> (ptpc), one device call.
set -uo pipefail
D=$PWD/build-k1024-dev
export LD_LIBRARY_PATH=$D/lib:/usr/local/cuda/lib64
export GEMMAR_CACHE_DIR=/tmp/gemmar-cache
G=$D/bin/gemmar B=$D/bin/gemmar_gpu_bench
s=$(date +%s)
t() { echo "[$(( $(date +%s) - s )) s] $*"; }
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,memory.total,power.draw --format=csv; nproc; $G --version; } > $OUT/machine.txt 2>&1
cat $OUT/machine.txt | head -4
# End to end, every config, the new kernel (default) and, for blockscale, the generic one (GEMMAR_GEMM_KERNEL=wgmma).
for q in blockscale ptpc; do
  echo "\$ gemmar run --backend gpu --quant $q --all-configs -m 6144 -n 5120 -k 1024" > $OUT/e2e_$q.log
  timeout -s KILL 150 $G run --backend gpu --quant $q --all-configs -m 6144 -n 5120 -k 1024 >> $OUT/e2e_$q.log 2>&1
  t "e2e $q rc=$?"; grep "run(s):" $OUT/e2e_$q.log
done
echo "\$ GEMMAR_GEMM_KERNEL=wgmma gemmar run --backend gpu --all-configs -m 6144 -n 5120 -k 1024" > $OUT/e2e_blockscale_generic.log
GEMMAR_GEMM_KERNEL=wgmma timeout -s KILL 150 $G run --backend gpu --all-configs -m 6144 -n 5120 -k 1024 >> $OUT/e2e_blockscale_generic.log 2>&1
t "e2e generic rc=$?"; grep "run(s):" $OUT/e2e_blockscale_generic.log
# The GEMM alone beside cuBLASLt (same process), before (wgmma: generic) and after (wgmma4), interleaved.
for rep in 1 2 3 4 5; do
  for q in blockscale ptpc; do for m in 4096 8192 16384; do for v in wgmma wgmma4; do
    echo "rep=$rep variant=$v \$ GEMMAR_GEMM_KERNEL=$v gemmar_gpu_bench gemm $m 5120 1024 $q"
    GEMMAR_GEMM_KERNEL=$v timeout -s KILL 60 $B gemm $m 5120 1024 $q
  done; done; done
  t "rep $rep"
  [ $(( $(date +%s) - s )) -gt 330 ] && { echo "time guard: stop after rep $rep"; break; }
done > $OUT/gemm.log 2>&1
tail -1 $OUT/gemm.log
python3 - $OUT/gemm.log <<'PY' | tee $OUT/summary.txt
import json, sys, statistics as st, collections
v = None; r = collections.defaultdict(list)
for line in open(sys.argv[1]):
    if line.startswith('rep='): v = line.split()[1].split('=')[1]
    if line.startswith('GEMM_JSON'):
        j = json.loads(line.split(' ', 1)[1]); r[(j['quant'], j['m'], v)].append(j)
print('quant m variant n ours_us(median) cublaslt_us(median) ratio(median) ratio(min-max) checked kernel')
for k in sorted(r):
    js = r[k]; rs = [j['ratio'] for j in js]
    print(k[0], k[1], k[2], len(js), '%.2f' % st.median(j['ours_us'] for j in js), '%.2f' % st.median(j['cublaslt_us'] for j in js),
          '%.3f' % st.median(rs), '%.3f-%.3f' % (min(rs), max(rs)), all(j['checked'] for j in js), js[0]['ours_kernel'][-40:])
PY
cuobjdump -sass $B > /tmp/sass.txt 2>&1
for f in $(grep -o 'Function : [A-Za-z0-9_]*gemm_wgmma4[A-Za-z0-9_]*' /tmp/sass.txt | awk '{print $3}' | sort -u); do
  awk -v f="$f" '/Function : /{on = ($3 == f)} on' /tmp/sass.txt > /tmp/one.txt
  echo "$f: QGMMA $(grep -c QGMMA /tmp/one.txt) LDL/STL $(grep -cE 'LDL|STL' /tmp/one.txt) WARPGROUP.DEPBAR $(grep -c 'WARPGROUP.DEPBAR' /tmp/one.txt) FMUL $(grep -c ' FMUL' /tmp/one.txt) FADD $(grep -c ' FADD' /tmp/one.txt)"
done > $OUT/sass_mix.txt 2>&1
sed 's/_ZN6gemmar7kernels3dev[0-9A-Za-z_]*blockscale_cu_[0-9a-f_]*//' $OUT/sass_mix.txt
t done
