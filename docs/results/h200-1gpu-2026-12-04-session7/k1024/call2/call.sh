#!/usr/bin/env bash
# k1024 (issue 25), second call: the final binaries (wgmma4 for K / 128 in {4, 8, 12, 16, 24, 32}).
set -uo pipefail
D=$PWD/build-k1024-dev
export LD_LIBRARY_PATH=$D/lib:/usr/local/cuda/lib64
export GEMMAR_CACHE_DIR=/tmp/gemmar-cache
G=$D/bin/gemmar B=$D/bin/gemmar_gpu_bench
s=$(date +%s)
t() { echo "[$(( $(date +%s) - s )) s] $*"; }
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,memory.total,power.draw --format=csv; $G --version; } > $OUT/machine.txt 2>&1
head -3 $OUT/machine.txt
e2e() {  # log quant m k
  echo "\$ gemmar run --backend gpu --quant $2 --all-configs -m $3 -n 5120 -k $4" >> $OUT/$1
  timeout -s KILL 120 $G run --backend gpu --quant $2 --all-configs -m $3 -n 5120 -k $4 >> $OUT/$1 2>&1
  t "e2e $2 m=$3 k=$4 rc=$? $(tail -1 $OUT/$1)"
}
for q in blockscale ptpc; do e2e e2e_k1024_$q.log $q 6144 1024; done
# The GEMM alone, the final binary, K = 1024 (the new kernel) and K = 2048 (unchanged kernel: no regression).
for rep in 1 2 3; do for k in 1024 2048; do for q in blockscale ptpc; do for m in 4096 8192 16384; do
  n=$([ $k = 2048 ] && echo 7168 || echo 5120)
  echo "rep=$rep variant=wgmma4 \$ gemmar_gpu_bench gemm $m $n $k $q"; timeout -s KILL 60 $B gemm $m $n $k $q
done; done; done; t "rep $rep"; done > $OUT/gemm_final.log 2>&1
tail -1 $OUT/gemm_final.log
# The other instantiations: end to end and beside cuBLASLt (generic kernel, then the new one), M = 8192.
for k in 512 1536 3072 4096; do
  for q in blockscale ptpc; do e2e e2e_otherk.log $q 2048 $k; done
  [ $(( $(date +%s) - s )) -gt 230 ] && { echo "time guard after k=$k"; break; }
done
for k in 512 1536 3072 4096; do for q in blockscale ptpc; do for v in wgmma wgmma4; do
  echo "rep=1 variant=$v \$ GEMMAR_GEMM_KERNEL=$v gemmar_gpu_bench gemm 8192 5120 $k $q"; GEMMAR_GEMM_KERNEL=$v timeout -s KILL 60 $B gemm 8192 5120 $k $q
done; done; done > $OUT/gemm_otherk.log 2>&1
t "otherk bench"
python3 - $OUT/gemm_final.log $OUT/gemm_otherk.log <<'PY' | tee $OUT/summary.txt
import json, sys, statistics as st, collections
for f in sys.argv[1:]:
    v = None; r = collections.defaultdict(list)
    for line in open(f):
        if line.startswith('rep='): v = line.split()[1].split('=')[1]
        if line.startswith('GEMM_JSON'):
            j = json.loads(line.split(' ', 1)[1]); r[(j['quant'], j['n'], j['k'], j['m'], v)].append(j)
    print('#', f.split('/')[-1], ': quant n k m variant runs ours_us(median) cublaslt_us(median) ratio(median) ratio(min-max) checked kernel')
    for key in sorted(r):
        js = r[key]; rs = [j['ratio'] for j in js]
        print(*key, len(js), '%.2f' % st.median(j['ours_us'] for j in js), '%.2f' % st.median(j['cublaslt_us'] for j in js),
              '%.3f' % st.median(rs), '%.3f-%.3f' % (min(rs), max(rs)), all(j['checked'] for j in js), js[0]['ours_kernel'][-34:])
PY
t done
