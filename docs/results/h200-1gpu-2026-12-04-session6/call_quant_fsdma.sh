#!/usr/bin/env bash
# Session 6: quant wgmma (ptpc / mxfp8 on the tensor cores) and fused-sdma persistent vs chunks.
export LD_LIBRARY_PATH=$PWD/.dev/lib:/usr/local/cuda/lib64
export GEMMAR_CACHE_DIR=/tmp/gemmar-cache
s=$(date +%s)
mkdir -p $OUT/quant $OUT/fsdma
OUT=$OUT/quant bash .dev/quant_wgmma.sh 2>&1 | tail -40
echo "quant done $(( $(date +%s) - s )) s"
scripts/device_fused_sdma_run.sh .dev/bin/gemmar $OUT/fsdma 2>&1 | tail -60
echo "all done $(( $(date +%s) - s )) s"
