#!/usr/bin/env bash
# The C++/CUDA sources in .clang-format's layout (issue 26): `scripts/format.sh` rewrites them in place,
# `scripts/format.sh --check` lists the files that differ and exits 1 (scripts/test.sh runs it when clang-format-14
# is installed: other clang-format versions lay some constructs out differently).
#   CLANG_FORMAT  the binary (default clang-format-14)
set -euo pipefail
cd "$(dirname "$0")/.."
cf=${CLANG_FORMAT:-clang-format-14}
command -v "$cf" >/dev/null || { echo "format.sh: $cf not found (apt-get install clang-format-14)" >&2; exit 3; }
mapfile -t files < <(git ls-files '*.cpp' '*.hpp' '*.cu' '*.cuh' '*.h' '*.cc')
if [[ "${1:-}" == --check ]]; then
  bad=()
  for f in "${files[@]}"; do "$cf" --dry-run -Werror "$f" >/dev/null 2>&1 || bad+=("$f"); done
  if ((${#bad[@]})); then
    printf 'format.sh: not in .clang-format layout (run scripts/format.sh): %s\n' "${bad[@]}" >&2
    exit 1
  fi
  echo "format.sh: ${#files[@]} files in .clang-format layout"
else
  "$cf" -i "${files[@]}"
fi
