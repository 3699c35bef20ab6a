#!/usr/bin/env bash
# The .deb end to end, without root: build it (cmake --preset package: CPU-only, portable -march, no tests;
# cpack --preset package), unpack it with dpkg-deb -x into a temporary directory and run the unpacked binary from
# there, with GEMMAR_REPORTS_DIR unset: --version (text and JSON), then `gemmar validate` with its report. Also
# checks what the package declares: its file name, a Depends that covers every clause dpkg-shlibdeps derives from
# the binary, each dependency a package known to dpkg, no AVX in the binary (it must run on any x86-64), no RPATH
# and no absolute path into the source or build tree's data. Called by scripts/test.sh; the package stays in
# build-package/.
set -euo pipefail
cd "$(dirname "$0")/.."
src=$(pwd)
fail() { echo "package_check: FAIL: $*" >&2; exit 1; }
start=$SECONDS

cmake --preset package >/dev/null
cmake --build --preset package -j"$(nproc)"
rm -f build-package/gemmar_*.deb
cpack --preset package >/dev/null
version=$(sed -n 's/^project(gemmar VERSION \([0-9.]*\) .*/\1/p' CMakeLists.txt)
deb=build-package/gemmar_${version}_$(dpkg --print-architecture).deb
[[ -f $deb ]] || fail "cpack did not write $deb (found: $(ls build-package/*.deb 2>/dev/null))"
echo "package_check: built $deb in $((SECONDS - start)) s"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
dpkg-deb -x "$deb" "$tmp/root"
gemmar=$tmp/root/usr/bin/gemmar
[[ -x $gemmar ]] || fail "$deb has no usr/bin/gemmar"

# What the package declares.
depends=$(dpkg-deb -f "$deb" Depends)
[[ $(dpkg-deb -f "$deb" Package) == gemmar && $(dpkg-deb -f "$deb" Version) == "$version" ]] ||
  fail "control: Package/Version are '$(dpkg-deb -f "$deb" Package)' '$(dpkg-deb -f "$deb" Version)'"
mkdir -p "$tmp/shl/debian" && touch "$tmp/shl/debian/control"
shlibs=$(cd "$tmp/shl" && dpkg-shlibdeps -O "$gemmar" 2>/dev/null | sed -n 's/^shlibs:Depends=//p')
[[ -n $shlibs ]] || fail "dpkg-shlibdeps derived no dependencies from $gemmar"
IFS=',' read -ra clauses <<<"$shlibs"
for c in "${clauses[@]}"; do
  c=$(echo "$c" | xargs)
  [[ ", $depends," == *", $c,"* ]] ||
    fail "the binary needs '$c' (dpkg-shlibdeps) but CPACK_DEBIAN_PACKAGE_DEPENDS (cmake/install.cmake) declares '$depends'"
done
IFS=',' read -ra declared <<<"$depends"
for d in "${declared[@]}"; do
  name=$(echo "$d" | sed 's/(.*//' | xargs)
  dpkg-query -W -f='${Status}' "$name" 2>/dev/null | grep -q "install ok installed" ||
    fail "declared dependency '$name' is not a package installed here (Debian 12 name?)"
done
avx=$(objdump -d --no-show-raw-insn "$gemmar" | grep -cE '%[yz]mm' || true)
((avx == 0)) || fail "$gemmar has $avx AVX instructions: the package must run on any x86-64 (GEMMAR_NATIVE=OFF)"
rpath=$(objdump -p "$gemmar" | grep -E '^ *R(UN)?PATH' || true)
[[ -z $rpath ]] || fail "$gemmar carries a library search path into the build machine: $rpath"
for p in "$src/reports" "$src/python" "$src/model/profiles" "$src/build-package/share"; do
  ! grep -qaF "$p" "$gemmar" || fail "$gemmar holds the build machine's path $p"
done

# The unpacked binary, run from an unrelated directory with nothing of the source tree in reach.
cd "$tmp"
run() { env -u GEMMAR_REPORTS_DIR GEMMAR_CACHE_DIR="$tmp/cache" "$gemmar" "$@"; }
run --version
run --version --json >"$tmp/version.json"
/usr/bin/python3 - "$tmp/version.json" "$version" "$tmp/root/usr/share/gemmar" <<'PY'
import json, os, sys
v = json.load(open(sys.argv[1]))
want = {"version": sys.argv[2], "march": "", "sanitizers": [], "reports_found": True,
        "data_dir": os.path.realpath(sys.argv[3])}
bad = {k: v.get(k) for k, w in want.items() if v.get(k) != w}
if bad or v["commit"] == "":
    sys.exit(f"package_check: FAIL: --version --json has {bad} (want {want}), commit '{v['commit']}'")
PY
validate_start=$SECONDS
rc=0
run validate -m 1024 -n 1024 -k 256 --world 4 --iterations 2 --check-rows 64 --out "$tmp/validate" >"$tmp/validate.log" 2>&1 ||
  rc=$?
((rc == 0)) || { cat "$tmp/validate.log"; fail "the unpacked binary's gemmar validate exited $rc"; }
for f in results.json runs.log report/index.html report/runs.html report/phases_by_mode.png; do
  [[ -s $tmp/validate/$f ]] || fail "gemmar validate from the package wrote no $f"
done
tail -n 1 "$tmp/validate.log"
echo "package_check: $deb unpacked and run: --version, validate with its report ($((SECONDS - validate_start)) s); $((SECONDS - start)) s in all"
