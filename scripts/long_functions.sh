#!/usr/bin/env bash
# Lists functions longer than LIMIT lines (default 80) in the given C++ files, free functions and members defined
# inside a class body alike. A definition starts at a line, at any indentation, that opens a signature (a name
# and "(", not a control statement, a declaration ending in ";", or an initializer "x = ..."); its "{" is on that
# line or on one of the lines that follow (a wrapped signature, a constructor's ": a_(a) {"). It ends where its
# braces balance again, braces in string and character literals and in // comments not counted. The count runs
# from the signature's first line to the closing "}", both included. A lambda or a local class inside a function
# is part of that function. Heuristic, enough for issue 26's "no function over ~80 lines" check.
# Usage: scripts/long_functions.sh [LIMIT] FILE...
set -euo pipefail
limit=80
[[ ${1:-} =~ ^[0-9]+$ ]] && { limit=$1; shift; }
awk -v limit="$limit" -v q="'" '
  function clean(s,   lit) {
    gsub(/\\\\/, "", s)                       # an escaped backslash cannot escape a quote
    gsub(/"([^"\\]|\\.)*"/, "\"\"", s)
    lit = q "([^" q "\\\\]|\\\\.)*" q
    gsub(lit, "0", s)
    sub(/\/\/.*/, "", s)
    gsub(/\/\*([^*]|\*+[^*\/])*\*+\//, "", s)
    return s
  }
  function is_head(t,   pre) {
    if (t !~ /^[ \t]*[A-Za-z_~:].*\(/) return 0
    if (t ~ /^[ \t]*(namespace|using|typedef|struct|class|union|enum|return|if|for|while|switch|else|do|case|try|catch|throw|delete|new|co_return|public|private|protected|default|goto|break|continue|static_assert)([^A-Za-z0-9_]|$)/) return 0
    if (t ~ /;[ \t]*$/) return 0
    pre = t
    sub(/\(.*/, "", pre)
    if (pre ~ /[^=!<>]=[^=]/ || pre ~ /[^=!<>]=$/) return 0   # an initializer "T x = f(...)", not "operator=="
    return 1
  }
  function opens(t,   c) { c = t; return gsub(/\{/, "", c) }
  function closes(t,   c) { c = t; return gsub(/\}/, "", c) }
  FNR == 1 { state = 0 }
  {
    t = clean($0)
    if (state == 2) {
      depth += opens(t) - closes(t)
      if (depth <= 0) {
        n = FNR - start + 1
        if (n > limit) printf "%5d %s:%d %s\n", n, FILENAME, start, name
        state = 0
      }
      next
    }
    if (state == 1) {                          # a signature without its "{" yet
      if (t ~ /^[ \t]*$/ || t ~ /^[ \t]*#/ || t ~ /;[ \t]*$/ || FNR - start > 8) { state = 0 }
      else if (opens(t)) {
        depth = opens(t) - closes(t)
        if (depth > 0) { state = 2; next }
        state = 0                              # "{}" on one line: not long
      }
      if (state == 1) next
    }
    if (state == 0 && is_head(t)) {
      start = FNR; name = $0
      if (opens(t)) {
        depth = opens(t) - closes(t)
        state = depth > 0 ? 2 : 0
      } else {
        state = 1
      }
    }
  }
' "$@" | sort -rn
