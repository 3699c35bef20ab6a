#!/usr/bin/env bash
# On the GPU machine: several device scripts in one call, each under its own time limit, so that a call (at most
# 10 minutes, 8 files back) can carry more than one purpose when the session's device time allows few starts.
# Each stage runs as `bash -c COMMAND` with OUT set to a folder of its own; its stdout and stderr go to that folder's
# stdout.log, the log's last BATCH_TAIL (40) lines are printed, and the folder comes back as $OUT/NAME.tgz (one file
# per stage: `run` returns at most 8). A stage killed at its limit keeps what it wrote.
# Usage: scripts/device_batch.sh NAME:SECONDS:COMMAND ...
#   e.g. scripts/device_batch.sh fp8:230:scripts/device_fp8_scatter.sh mx:170:scripts/device_mxfp8.sh
# The carried binaries (.dev, scripts/device_pack.sh) are unpacked once here, before the first stage.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:?the output directory}
source scripts/device_lib.sh
unpack_dev
machine_record "$OUT" > /dev/null
work=$(mktemp -d)
for spec in "$@"; do
  name=${spec%%:*}
  rest=${spec#*:}
  secs=${rest%%:*}
  cmd=${rest#*:}
  [[ $name =~ ^[A-Za-z0-9_-]+$ && $secs =~ ^[0-9]+$ && -n $cmd ]] || { echo "device_batch.sh: bad stage '$spec' (NAME:SECONDS:COMMAND)"; exit 2; }
  mkdir -p "$work/$name"
  t0=$SECONDS
  OUT="$work/$name" timeout -s KILL "$secs" bash -c "$cmd" > "$work/$name/stdout.log" 2>&1
  rc=$?
  echo "=== $name rc=$rc ($((SECONDS - t0)) s, limit $secs s): $cmd"
  tail -n "${BATCH_TAIL:-40}" "$work/$name/stdout.log" | cut -c1-300
  tar --force-local -czf "$OUT/$name.tgz" -C "$work" "$name"
done
echo "=== batch done in ${SECONDS} s"
