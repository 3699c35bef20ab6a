# Sourced by scripts/device_*.sh on the GPU machine: the binaries a device call carries, the machine's record, a
# logged step with a timeout, one `gemmar run --backend gpu --json`, the configurations by name, and the faults
# injected one by one. One copy of each, so the device scripts differ only in what they run.
#   source scripts/device_lib.sh [GEMMAR OUTDIR]   with the two arguments: G and OUT set, OUT/machine.txt written
#
# The binaries: a build of this tree carried as DIR/gemmar and DIR/gemmar_gpu_bench (xz-packed, with the shared
# libraries the device lacks in .dev/lib: scripts/device_pack.sh makes both here), or a build tree's.
# unpack_dev: every .dev/**/*.xz unpacked in place, .dev/lib on LD_LIBRARY_PATH.
unpack_dev() {
  [[ -d .dev ]] || return 0
  /usr/bin/python3 - <<'PY'
import glob, lzma, os
for f in glob.glob(".dev/**/*.xz", recursive=True):
    with lzma.open(f) as src, open(f[:-3], "wb") as dst:
        dst.write(src.read())
    os.chmod(f[:-3], 0o755)
    os.remove(f)
PY
  [[ -d .dev/lib ]] && export LD_LIBRARY_PATH="$PWD/.dev/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  return 0
}

# The machine a call ran on, into DIR/machine.txt (and on stdout).
machine_record() {
  mkdir -p "$1"
  { date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,memory.total,power.limit --format=csv; } \
    2>&1 | tee "$1/machine.txt"
}

# step SECONDS CMD...: the command, killed after SECONDS, its exit status after it ("rc=N").
step() {
  local limit=$1
  shift
  echo "\$ $*"
  timeout -s KILL "$limit" "$@"
  local rc=$?
  echo "rc=$rc"
  return $rc
}

# left SECONDS: whether the call has been running less than SECONDS (SECONDS is bash's clock since the start).
left() { ((SECONDS < $1)); }

# run ARGS...: `$G ARGS` logged ("$ gemmar ARGS", then "rc=N"), killed after DEVICE_RUN_TIMEOUT (300) seconds.
run() {
  echo "\$ gemmar $*"
  timeout "${DEVICE_RUN_TIMEOUT:-300}" "$G" "$@"
  echo "rc=$?"
}

# jrun TAG ARGS...: one `$G run --backend gpu --json ARGS`, its JSON on one line after a "# TAG" line and before
# "# rc=N" (what the device scripts' summaries parse).
jrun() {
  local tag=$1
  shift
  echo "# $tag"
  timeout "${DEVICE_RUN_TIMEOUT:-300}" "$G" run --backend gpu --json "$@" | tr -d '\n'
  local rc=${PIPESTATUS[0]}
  echo
  echo "# rc=$rc"
}

# jrun_to GEMMAR FILE ARGS...: one `GEMMAR run --backend gpu --json ARGS` into FILE (its stderr into FILE.err).
jrun_to() {
  local g=$1 file=$2
  shift 2
  timeout -s KILL "${DEVICE_RUN_TIMEOUT:-300}" "$g" run --backend gpu --json "$@" > "$file" 2> "$file.err"
  local rc=$?
  echo "== $(basename "$file") rc=$rc t=${SECONDS}s"
  return $rc
}

# The configurations by name (as arrays: "${FP8S[@]}").
BF16=(--mode fused-sdma --gather-dtype bf16)
FP8S=(--mode fused-sdma --gather-dtype fp8 --gather-transport sdma)
FP8L=(--mode fused-lsa --gather-dtype fp8 --gather-transport lsa)
LSA=(--mode split-lsa)

# inject_faults FAULT...: each fault on the fused-sdma bf16 wire and on its fp8/sdma wire, at M = 4096 (each must
# fail with its code; common/faults.cpp's table says which).
inject_faults() {
  local f
  for f in "$@"; do
    run run --backend gpu -m 4096 "${BF16[@]}" --inject "$f"
    run run --backend gpu -m 4096 "${FP8S[@]}" --inject "$f"
  done
}

# inject_pull_grids BLOCKS...: each pull grid on the fused-sdma fp8/lsa wire at M = 16384.
inject_pull_grids() {
  local b
  for b in "$@"; do
    run run --backend gpu -m 16384 --mode fused-sdma --gather-dtype fp8 --gather-transport lsa --inject pull-blocks="$b"
  done
}

if (($# >= 2)); then
  G=$1
  OUT=$2
  machine_record "$OUT" > /dev/null
fi
