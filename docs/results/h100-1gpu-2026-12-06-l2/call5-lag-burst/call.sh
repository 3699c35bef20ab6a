#!/usr/bin/env bash
# dev: lag and group of the clusters-along-M kernel (with L2 hints); sustained bursts of each GEMM with clocks and power
export LD_LIBRARY_PATH=$PWD/.dev/lib:${LD_LIBRARY_PATH:-}
D=$OUT/lag; mkdir -p $D
B=.dev/lag/gemmar_gpu_bench
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,memory.total,power.limit --format=csv; } > $D/machine.txt
one() { local tag=$1; shift; local envs=(); while [[ $1 != -- ]]; do envs+=("$1"); shift; done; shift
  local j; j=$(env "${envs[@]}" timeout -s KILL 30 $B gemm "$@" blockscale 2>>$D/err.txt | grep GEMM_JSON | cut -d' ' -f2-); echo "$tag $1x$2x$3 $j"; }
for rep in 1 2; do for s in "16384 7168 2048" "16384 5120 2048"; do
  for L in 0 1 2 3; do one lag$L GEMMAR_DEV_LAG=$L -- $s; done
  for G in 1 4; do one group$G GEMMAR_DEV_GROUP=$G -- $s; done
done; done > $D/lines.txt
python3 - $D/lines.txt <<'PY'
import sys, json, collections
r = collections.defaultdict(list)
for line in open(sys.argv[1]):
    p = line.split(' ', 2)
    if len(p) < 3 or not p[2].strip().startswith('{'): continue
    j = json.loads(p[2]); r[(p[1], p[0])].append((j['ours_us'], j['cublaslt_us'], j['ratio'], j['checked']))
for k in sorted(r): print(*k, ' '.join('%.1f/%.1f=%.3f%s' % (a, b, c, '' if d else '!') for a, b, c, d in r[k]))
PY
echo "t=$SECONDS"
nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv,noheader -lms 10 > $D/smi.csv 2>&1 &
SMI=$!
sleep 1
GEMMAR_DEV_BURST=1000 timeout -s KILL 60 $B gemm 16384 7168 2048 blockscale 2>&1 | grep -E "BURST|GEMM_JSON" | cut -c1-200 > $D/burst16384.txt
GEMMAR_DEV_BURST=2000 timeout -s KILL 60 $B gemm 8192 7168 2048 blockscale 2>&1 | grep -E "BURST|GEMM_JSON" | cut -c1-200 > $D/burst8192.txt
GEMMAR_DEV_BURST=4000 timeout -s KILL 60 $B gemm 4096 7168 2048 blockscale 2>&1 | grep -E "BURST|GEMM_JSON" | cut -c1-200 > $D/burst4096.txt
sleep 0.5; kill $SMI
python3 - $D <<'PY'
import sys, datetime, re, os
d = sys.argv[1]
smp = []
for line in open(os.path.join(d, 'smi.csv')):
    f = [x.strip() for x in line.split(',')]
    try:
        ts = datetime.datetime.strptime(f[0], '%Y/%m/%d %H:%M:%S.%f').replace(tzinfo=datetime.timezone.utc).timestamp()
        smp.append((ts, float(f[1].split()[0]), float(f[3].split()[0]), f[5]))
    except Exception: pass
print('samples', len(smp))
for fn in ('burst16384.txt', 'burst8192.txt', 'burst4096.txt'):
    for line in open(os.path.join(d, fn)):
        m = re.match(r'BURST (\w+) n=(\d+) per_launch_us=([\d.]+) from=([\d.]+) to=([\d.]+)', line)
        if not m: continue
        a, b = float(m.group(4)), float(m.group(5))
        w = [s for s in smp if a + 0.05 <= s[0] <= b]
        if not w: print(fn, m.group(1), m.group(3), 'no samples'); continue
        cl = sorted(s[1] for s in w); pw = sorted(s[2] for s in w)
        print(fn, m.group(1), 'us/launch', m.group(3), 'sm MHz median %.0f (%.0f-%.0f)' % (cl[len(cl)//2], cl[0], cl[-1]), 'W median %.0f (%.0f-%.0f)' % (pw[len(pw)//2], pw[0], pw[-1]), 'n', len(w), 'thr', sorted(set(s[3] for s in w)))
PY
tail -2 $D/err.txt; date -u
