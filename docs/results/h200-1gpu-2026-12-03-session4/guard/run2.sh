#!/usr/bin/env bash
# Issue 21 guard2, second call: the overhead after the GEMM check's fused multiply-adds (commit in the README).
set -u
D=$PWD/.dev/guard2
export LD_LIBRARY_PATH=$D/lib:/usr/local/cuda/lib64 GEMMAR_CACHE_DIR=/tmp/gemmar-cache
chmod +x "$D"/bin/*
G=$D/bin/gemmar
mkdir -p "$OUT/guard2"
cp "$0" "$OUT/guard2/run2.sh"
BF16=(--mode fused-sdma --gather-dtype bf16)
FP8S=(--mode fused-sdma --gather-dtype fp8 --gather-transport sdma)
jrun() { local tag=$1; shift; echo "# $tag"; timeout 120 "$G" run --backend gpu --json "$@" | tr -d '\n'; echo; echo "# rc=${PIPESTATUS[0]}"; }
{
  for m in 16384 4096; do
    for cfg in BF16 FP8S; do
      declare -n c=$cfg
      jrun "overhead off $cfg $m" -m "$m" "${c[@]}" --iterations 21 --check-every 100
      jrun "overhead on $cfg $m" -m "$m" "${c[@]}" --guard --iterations 21 --check-every 100
    done
  done
  GEMMAR_GUARD_PARTS=gemm jrun "part gemm FP8S 16384" -m 16384 "${FP8S[@]}" --guard --iterations 21 --check-every 100
  jrun "clean FP8S 16384" -m 16384 "${FP8S[@]}" --guard --iterations 100 --straggle 50 --check-every 1000
  jrun "clean BF16 4096" -m 4096 "${BF16[@]}" --guard --iterations 200 --straggle 50 --check-every 1000
  jrun "perturb FP8S 4096" -m 4096 "${FP8S[@]}" --guard --inject perturb-rank=3 --iterations 6 --check-every 100
} > "$OUT/guard2/overhead2.log" 2>&1
python3 - "$OUT/guard2/overhead2.log" <<'PY' | tee "$OUT/guard2/summary2.txt"
import json, sys
tag = None
for line in open(sys.argv[1], errors="replace"):
    if line.startswith("# rc="): continue
    if line.startswith("# "): tag = line[2:].strip(); continue
    if line.startswith("{"):
        for r in json.loads(line).get("runs", []):
            rec = r["record"]; g = rec.get("guard", {})
            print(f"{tag:28s} time={rec.get('max_rank_time_us')} guard_phase={rec.get('phases_us', {}).get('guard')} "
                  f"calls={g.get('calls')} flagged={g.get('flagged_calls')} {list(g.get('codes', {}))}")
PY
