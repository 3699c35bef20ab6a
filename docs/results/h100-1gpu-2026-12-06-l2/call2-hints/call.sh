#!/usr/bin/env bash
# dev: L2 cache hints, group sizes, share-B threshold; one bench process per line, alternating with cuBLASLt
export LD_LIBRARY_PATH=$PWD/.dev/lib:${LD_LIBRARY_PATH:-}
B=.dev/hints/gemmar_gpu_bench
D=$OUT/hints; mkdir -p $D
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,memory.total,power.limit --format=csv; } | tee $D/machine.txt
one() { # tag env... -- m n k
  local tag=$1; shift; local envs=(); while [[ $1 != -- ]]; do envs+=("$1"); shift; done; shift
  local j; j=$(env "${envs[@]}" timeout -s KILL 30 $B gemm "$@" blockscale 2>>$D/err.txt | grep GEMM_JSON | cut -d' ' -f2-)
  echo "$tag $* $j"
}
for rep in 1 2; do
  for s in "16384 7168 2048" "16384 5120 2048" "8192 7168 2048"; do
    for h in 0 1 16 2 3 6 10; do one h$h GEMMAR_DEV_HINTS=$h -- $s; done
    if [[ $s == 8192* ]]; then
      one shareB_h0 GEMMAR_DEV_SHAREB=8192 -- $s; one shareB_h3 GEMMAR_DEV_SHAREB=8192 GEMMAR_DEV_HINTS=3 -- $s
    else
      one g1 GEMMAR_DEV_GROUP=1 -- $s; one g4 GEMMAR_DEV_GROUP=4 -- $s
    fi
  done
  echo "t=$SECONDS"
done | tee $D/lines.txt
python3 - $D/lines.txt <<'PY'
import sys, json, collections
r = collections.defaultdict(list)
for line in open(sys.argv[1]):
    p = line.split(' ', 4)
    if len(p) < 5 or not p[4].strip().startswith('{'): continue
    j = json.loads(p[4]); r[(p[1], p[0])].append((j['ours_us'], j['cublaslt_us'], j['ratio'], j['checked']))
for k in sorted(r): print(*k, ' '.join('%.1f/%.1f=%.3f%s' % (a, b, c, '' if d else '!') for a, b, c, d in r[k]))
PY
tail -3 $D/err.txt; date -u
