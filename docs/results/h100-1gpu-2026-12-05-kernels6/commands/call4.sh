export LD_LIBRARY_PATH=$PWD/.dev/lib:$LD_LIBRARY_PATH
D=$OUT/call4; mkdir -p $D; date -u
B=.dev/bin/gemmar_gpu_bench; G=.dev/bin/gemmar
S() { python3 scripts/e2e_summary.py "$@" | cut -c1-300; }
for w in int8 bulk; do for b in 64 132; do GEMMAR_WIDEN_KERNEL=$w timeout 60 $B data 131072 7168 $b 2>&1 | grep -E "DATA_JSON|rror" | cut -c1-420; done; done
GEMMAR_WIDEN_KERNEL=bulk timeout 60 $B data 131072 5120 64 2>&1 | grep -E "DATA_JSON|rror" | cut -c1-420
for w in int8 bulk; do SECONDS=0; GEMMAR_WIDEN_KERNEL=$w timeout 200 $G run --backend gpu --all-configs -m 16384 --json > $D/e2e_$w.json 2> $D/e2e.err; echo "e2e $w rc=$? ${SECONDS}s"; S $D/e2e_$w.json; done
GEMMAR_WIDEN_KERNEL=bulk timeout 100 $G run --backend gpu --all-configs -m 1000 -n 5120 -k 1024 --json > $D/e2e_bulk_1000.json 2>> $D/e2e.err; echo "e2e bulk 1000 rc=$?"; S $D/e2e_bulk_1000.json | grep fp8
tail -3 $D/e2e.err; date -u
