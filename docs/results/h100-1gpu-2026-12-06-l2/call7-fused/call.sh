#!/usr/bin/env bash
# main (8aa8595) vs the L2 hints (cand) on one machine: fused-sdma's GEMM phase at 6144 x 5120 x 1024, and the GEMM
export LD_LIBRARY_PATH=$PWD/.dev/lib:${LD_LIBRARY_PATH:-}
D=$OUT/fused; mkdir -p $D
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,memory.total,power.limit --format=csv; } | tee $D/machine.txt
for rep in 1 2; do for b in main cand; do
  timeout 60 .dev/$b/gemmar run --backend gpu --all-configs -m 6144 -n 5120 -k 1024 --json > $D/e2e_${b}_$rep.json 2>>$D/err.txt; echo "e2e $b $rep rc=$?"
done; done
for rep in 1 2; do for b in main cand; do for s in "16384 7168 2048" "6144 5120 1024"; do
  echo "$b $(timeout -s KILL 30 .dev/$b/gemmar_gpu_bench gemm $s 2>>$D/err.txt | grep GEMM_JSON | python3 -c 'import json,sys; j=json.loads(sys.stdin.read().split(" ",1)[1]); print(j["m"],j["n"],j["k"],j["ours_us"],j["cublaslt_us"],j["ratio"],j["checked"])')"
done; done; done | tee $D/gemm.txt
python3 - $D <<'PY'
import json, glob, sys
for f in sorted(glob.glob(sys.argv[1] + '/e2e_*.json')):
    j = json.load(open(f))
    g = {r['config']: r['record']['phases_us'].get('gemm') for r in j['runs']}
    base = [v for k, v in g.items() if k.startswith('gemm-only')][0]
    print(f.split('/')[-1], 'wrong', sum(r['record']['wrong_elements'] for r in j['runs']), 'gemm-only %.1f' % base,
          ' '.join('%s=%.1f(%.3f)' % (k.split('/')[0] + '/' + k.split('/')[2] + '/' + k.split('/')[3], v, base / v) for k, v in g.items() if k.startswith('fused')))
PY
date -u
