#!/usr/bin/env bash
# dev: main's bench (cand) beside the hint build; clusters along M on and off; same machine, alternating with cuBLASLt
export LD_LIBRARY_PATH=$PWD/.dev/lib:${LD_LIBRARY_PATH:-}
D=$OUT/hints2; mkdir -p $D
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,memory.total,power.limit,serial,pci.bus_id --format=csv; } | tee $D/machine.txt
one() { # tag bench env... -- m n k
  local tag=$1 b=$2; shift 2; local envs=(); while [[ $1 != -- ]]; do envs+=("$1"); shift; done; shift
  local j; j=$(env "${envs[@]}" GEMMAR_DEV_VERBOSE=1 timeout -s KILL 30 $b gemm "$@" blockscale 2>>$D/err.txt | grep GEMM_JSON | cut -d' ' -f2-)
  echo "$tag $* $j"
}
H=.dev/hints/gemmar_gpu_bench; C=.dev/cand/gemmar_gpu_bench
for rep in 1 2; do
  for s in "16384 7168 2048" "16384 5120 2048" "12288 7168 2048" "8192 7168 2048"; do
    one main $C -- $s
    one h0 $H GEMMAR_DEV_HINTS=0 -- $s
    one h3 $H GEMMAR_DEV_HINTS=3 -- $s
    one h0_nocl $H GEMMAR_DEV_HINTS=0 GEMMAR_DEV_SHAREB=1000000000 -- $s
    one h3_nocl $H GEMMAR_DEV_HINTS=3 GEMMAR_DEV_SHAREB=1000000000 -- $s
    one h3_cl $H GEMMAR_DEV_HINTS=3 GEMMAR_DEV_SHAREB=4096 -- $s
    [[ $s == 16384\ 7168* ]] && { one l0 $C GEMMAR_GEMM_KERNEL=wgmma4l0 -- $s; one mcm $C GEMMAR_GEMM_KERNEL=wgmma4mcm -- $s; }
  done
  echo "t=$SECONDS"
done | tee $D/lines.txt
python3 - $D/lines.txt <<'PY'
import sys, json, collections
r = collections.defaultdict(list)
for line in open(sys.argv[1]):
    p = line.split(' ', 4)
    if len(p) < 5 or not p[4].strip().startswith('{'): continue
    j = json.loads(p[4]); r[(p[1]+'x'+p[2], p[0])].append((j['ours_us'], j['cublaslt_us'], j['ratio'], j['checked']))
for k in sorted(r): print(*k, ' '.join('%.1f/%.1f=%.3f%s' % (a, b, c, '' if d else '!') for a, b, c, d in r[k]))
PY
sort $D/err.txt | uniq -c | head; date -u
