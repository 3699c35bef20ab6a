#!/usr/bin/env bash
# A/B on one machine: main (cand) vs L2 hints with clusters along M from 12288 rows (hA) vs hints without clusters (hB)
export LD_LIBRARY_PATH=$PWD/.dev/lib:${LD_LIBRARY_PATH:-}
D=$OUT/ab; mkdir -p $D
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,memory.total,power.limit --format=csv; } | tee $D/machine.txt
one() { # tag bench quant m n k
  local j; j=$(timeout -s KILL 30 .dev/$2/gemmar_gpu_bench gemm $4 $5 $6 $3 2>>$D/err.txt | grep GEMM_JSON | cut -d' ' -f2-)
  echo "$1 $3 $4x$5x$6 $j"
}
for rep in 1 2; do
  for s in "16384 7168 2048" "16384 5120 2048" "12288 7168 2048" "8192 7168 2048" "8192 5120 2048" "16384 5120 1024" "8192 5120 1024" "4096 7168 2048" "4096 5120 2048" "4096 5120 1024" "1000 7168 2048" "1000 5120 1024"; do
    for b in cand hA hB; do one $b $b blockscale $s; done
  done
  echo "t=$SECONDS"
done > $D/lines.txt
for s in "16384 7168 2048" "8192 7168 2048" "4096 7168 2048"; do for b in cand hA hB; do one $b $b ptpc $s; done; done >> $D/lines.txt
echo "t=$SECONDS"
python3 - $D/lines.txt <<'PY'
import sys, json, collections
r = collections.defaultdict(list)
for line in open(sys.argv[1]):
    p = line.split(' ', 3)
    if len(p) < 4 or not p[3].strip().startswith('{'): continue
    j = json.loads(p[3]); r[(p[1], p[2], p[0])].append((j['ours_us'], j['cublaslt_us'], j['ratio'], j['checked']))
for k in sorted(r): print(*k, ' '.join('%.1f/%.1f=%.3f%s' % (a, b, c, '' if d else '!') for a, b, c, d in r[k]))
PY
for b in cand hA hB; do timeout -s KILL 40 .dev/$b/gemmar_gpu_bench gemm-concurrent 16384 7168 2048 8 2>>$D/err.txt | grep CONCURRENT | sed "s/^/$b /"; done | tee $D/concurrent.txt
echo "t=$SECONDS"
e2e() { local tag=$1 b=$2; shift 2; timeout 60 .dev/$b/gemmar run --backend gpu --all-configs "$@" --json > $D/e2e_$tag.json 2>> $D/e2e.err; echo "== e2e $tag rc=$? t=$SECONDS"; python3 scripts/e2e_summary.py $D/e2e_$tag.json | cut -c1-200; }
(( SECONDS < 250 )) && e2e hA16384 hA -m 16384
(( SECONDS < 280 )) && e2e hB16384 hB -m 16384
(( SECONDS < 310 )) && e2e hA4096 hA -m 4096
(( SECONDS < 330 )) && e2e hAptpc4096 hA -m 4096 --quant ptpc
sort $D/err.txt | uniq -c | head -5; tail -3 $D/e2e.err; date -u
