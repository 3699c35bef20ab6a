#!/usr/bin/env bash
# Session 6, call 5: python/gemmar_guard.py's self-test for every quant, on the device (torch) and its CPU.
D=$OUT/pyguard; mkdir -p $D
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv; python3 -c "import torch; print('torch', torch.__version__)"; } > $D/machine.txt 2>&1
for dev in cuda cpu; do
  echo "\$ python3 python/gemmar_guard.py --selftest --device $dev"
  timeout 200 python3 python/gemmar_guard.py --selftest --device $dev 2>&1 | grep -v "^GUARD_\|^ERROR"
  echo "rc=${PIPESTATUS[0]}"
done > $D/selftest.log 2>&1
cat $D/machine.txt; grep -E "^\\$|^rc=|FAIL|failure" $D/selftest.log; grep -c "^ok" $D/selftest.log
