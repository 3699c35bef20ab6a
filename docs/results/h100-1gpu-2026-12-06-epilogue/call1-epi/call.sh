#!/usr/bin/env bash
# the epilogue: NaN probe by max.NaN (epi1), + stores through a 2 KiB per-warp stmatrix staging (epi2), against
# HEAD b98830f (cand) and HEAD without clusters along M (bsnc); epi3 = epi2 + the ring position as a running count
# and the scales read by ld.shared; 2 processes each, alternating builds
python3 -c 'import lzma,glob,os
for f in glob.glob(".dev/*/*.xz"):
    open(f[:-3],"wb").write(lzma.open(f).read()); os.chmod(f[:-3],0o755); os.remove(f)' 
export LD_LIBRARY_PATH=$PWD/.dev/lib:${LD_LIBRARY_PATH:-}
D=$OUT/epi; mkdir -p $D
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,memory.total,power.limit --format=csv; } | tee $D/machine.txt
g() { echo "$1 $(timeout -s KILL 30 .dev/$1/gemmar_gpu_bench gemm $2 $3 $4 $5 2>>$D/err.txt | grep GEMM_JSON | python3 -c 'import json,sys; j=json.loads(sys.stdin.read().split(" ",1)[1]); print(j["quant"],j["m"],j["n"],j["k"],j["ours_us"],j["cublaslt_us"],j["ratio"],j["checked"])')"; }
for b in cand epi1 epi2 epi3; do for q in blockscale ptpc; do for s in "4096 7168 2048" "1000 5120 1024"; do echo "$b $(timeout -s KILL 30 .dev/$b/gemmar_gpu_bench gemm-nan $s $q 2>&1 | tail -1 | cut -c1-260)"; done; done; done | tee $D/nan.txt
for rep in 1 2; do for s in "16384 7168 2048" "16384 5120 2048" "12288 7168 2048" "8192 7168 2048" "4096 7168 2048" "1000 7168 2048"; do for b in cand epi1 epi2 epi3 bsnc; do g $b $s blockscale; done; done; done > $D/gemm.txt
echo "t=$SECONDS"
for s in "16384 7168 2048" "4096 7168 2048"; do for b in cand epi2 epi3; do g $b $s ptpc; done; done >> $D/gemm.txt
sort -k2,2 -k3,3n -k4,4n -k1,1 $D/gemm.txt | awk '{print $2, $3"x"$4"x"$5, $1, $6"/"$7"="$8, $9}'
echo "t=$SECONDS"
for b in cand epi3; do timeout -s KILL 40 .dev/$b/gemmar_gpu_bench gemm-concurrent 16384 7168 2048 8 2>>$D/err.txt | grep CONCURRENT | sed "s/^/$b /" | cut -c1-330; done | tee $D/concurrent.txt
e2e() { timeout 90 .dev/epi3/gemmar run --backend gpu --all-configs "${@:2}" --json > $D/e2e_$1.json 2>>$D/err.txt; echo "== e2e $1 rc=$? t=$SECONDS"; python3 scripts/e2e_summary.py $D/e2e_$1.json | cut -c1-200; }
e2e bs16384 -m 16384
e2e bs4096 -m 4096
e2e ptpc4096 -m 4096 --quant ptpc
e2e bs6144 -m 6144 -n 5120 -k 1024
tail -3 $D/err.txt; date -u
# the SASS of the default kernels at 16384 (clusters along M) and 8192 (none), both builds
for b in cand epi3; do
  cuobjdump -sass .dev/$b/gemmar_gpu_bench 2>/dev/null | awk '/Function : /{keep = ($0 ~ /gemm_wgmma4_kernelILi16ELi2ELb0ELi(1|2)ELi1E/)} keep' > $D/sass_$b.txt
  python3 - $D/sass_$b.txt <<'PY'
import re, sys, collections
fn = None; c = collections.defaultdict(collections.Counter)
for line in open(sys.argv[1]):
    m = re.search(r'Function : (\S+)', line)
    if m: fn = re.search(r'ILi16ELi2ELb0ELi(\d)ELi1E', m.group(1)).group(1); continue
    m = re.match(r'\s+/\*[0-9a-f]+\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_]*)(\.[A-Z0-9_.]+)?', line)
    if m and fn: c[fn][m.group(1)] += 1
for fn, cnt in c.items():
    print('cluster M', fn, 'total', sum(cnt.values()), ' '.join('%s=%d' % kv for kv in cnt.most_common(28)))
PY
done
gzip -f $D/sass_*.txt
