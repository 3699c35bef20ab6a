#!/usr/bin/env bash
# The main job from a fresh clone: install what is missing, build the CPU-only gemmar, run `gemmar validate`
# on the embedded default (CPU emulation of every mode and wire) and write results + report to out/validate.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install_deps.sh
cmake --preset default >/dev/null
cmake --build --preset default -j"$(nproc)" --target gemmar
exec build/validate/gemmar validate --out out/validate --force "$@"  # --force: replace the previous run's out/validate (only ever a gemmar output)
