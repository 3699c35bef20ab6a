#!/usr/bin/env bash
# Lists functions longer than LIMIT lines (default 80) in the given C++ files: a definition starts at a line at
# column 0 that is not a comment, preprocessor line, namespace or closing brace and ends at the next line that is
# exactly "}". Heuristic (clang-format's layout), enough for issue 26's "no function over ~80 lines" check.
# Usage: scripts/long_functions.sh [LIMIT] FILE...
set -euo pipefail
limit=80
[[ ${1:-} =~ ^[0-9]+$ ]] && { limit=$1; shift; }
awk -v limit="$limit" '
  FNR == 1 { start = 0 }
  start == 0 && /^[A-Za-z].*[({]/ && !/^(namespace|#|\/\/|using|struct|class|enum|template)/ && !/;$/ && !/}$/ { start = FNR; name = $0 }
  start && /^}$/ { n = FNR - start + 1; if (n > limit) printf "%5d %s:%d %s\n", n, FILENAME, start, name; start = 0 }
' "$@" | sort -rn
