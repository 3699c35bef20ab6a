export LD_LIBRARY_PATH=$PWD/.dev/lib:$LD_LIBRARY_PATH
D=$OUT/call5; mkdir -p $D; date -u
B=.dev/bin/gemmar_gpu_bench; G=.dev/bin/gemmar
S() { python3 scripts/e2e_summary.py "$@" | cut -c1-300; }
for m in 16384 4096; do SECONDS=0; timeout 200 $G run --backend gpu --all-configs -m $m --json > $D/e2e_$m.json 2>> $D/e2e.err; echo "e2e $m rc=$? ${SECONDS}s"; S $D/e2e_$m.json; done
timeout 100 $G run --backend gpu --all-configs -m 1000 -n 5120 -k 1024 --json > $D/e2e_1000.json 2>> $D/e2e.err; echo "e2e 1000 rc=$?"; S $D/e2e_1000.json | grep fused
for f in silent-scatter no-release stale-output silent-gather; do for w in "--gather-dtype bf16" "--gather-dtype fp8 --gather-transport sdma"; do timeout 60 $G run --backend gpu -m 4096 --mode fused-sdma $w --inject $f > $D/f.txt 2>&1; echo "inject $f $w rc=$? $(grep -o 'verdict[^,]*' $D/f.txt | head -1) $(grep -oE '[A-Z_]{6,}' $D/f.txt | sort -u | head -4 | tr '\n' ' ')"; done; done
tail -3 $D/e2e.err; date -u
