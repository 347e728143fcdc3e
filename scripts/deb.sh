#!/bin/sh
# Build the Debian packages (libpincache, pincache) from this checkout, check
# them with lintian (any error fails), unpack them into a scratch root and run
# the installed `pincache run`, `pincache report` and `pincache doctor` on the
# simulated device.
# Installs the packaging tools with apt when missing.  Everything it makes
# lies in _build/deb (the .debs, .changes and lintian.txt at its top).
#   scripts/deb.sh
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
export CUDA_HOME
jobs=$(nproc 2>/dev/null || echo 2)
out=$top/_build/deb

# The build tree (_build/plain) gives the simulated libcudart and a program
# on it; setup.sh also installs the packaging tools.
scripts/setup.sh dpkg-buildpackage:dpkg-dev dh:debhelper dh_autoreconf:dh-autoreconf lintian:lintian \
    /usr/share/build-essential/list:build-essential

debver=$(dpkg-parsechangelog -S Version)
upver=${debver%-*}
confver=$(sed -n 's/^AC_INIT(\[pincache\], \[\([^]]*\)\].*/\1/p' configure.ac)
[ "$upver" = "$confver" ] || {
    echo "pincache: debian/changelog says $upver, configure.ac $confver: add a changelog entry (dch -v $confver-1)" >&2
    exit 1; }

# A copy of the sources (what git tracks, plus files not yet added), so that
# the build's regenerated configure and debian/ leftovers stay out of the
# checkout; its orig tarball lets dpkg-buildpackage build the source package
# too, which lintian then checks with the binaries.
echo "== copy sources (_build/deb/pincache-$upver)"
rm -rf "$out"
src=$out/pincache-$upver
mkdir -p "$src"
if git rev-parse --git-dir >/dev/null 2>&1; then
    git ls-files -z -co --exclude-standard | tar --null --ignore-failed-read -T - -cf - | tar -C "$src" -xf -
else
    tar --exclude=./_build --exclude=./.git -cf - . | tar -C "$src" -xf -
fi
[ -f "$src/debian/control" ] || { echo "pincache: no debian/ here (the release tarball leaves it out: build from a git clone)" >&2; exit 1; }
tar -C "$out" --exclude="pincache-$upver/debian" -czf "$out/pincache_$upver.orig.tar.gz" "pincache-$upver"

echo "== dpkg-buildpackage (log: _build/deb/build.log)"
(cd "$src" && DEB_BUILD_OPTIONS="parallel=$jobs${DEB_BUILD_OPTIONS:+ $DEB_BUILD_OPTIONS}" \
    dpkg-buildpackage -us -uc) >"$out/build.log" 2>&1 || {
    # dh_auto_configure follows configure's own message with all of config.log.
    tail -40 "$out/build.log"; grep -h '^configure: error' "$out/build.log" >&2 || :
    echo "pincache: package build failed (log: $out/build.log)" >&2; exit 1; }
changes=$(ls "$out"/pincache_*.changes)

echo "== lintian"
rc=0
lintian --fail-on error "$changes" >"$out/lintian.txt" 2>&1 || rc=$?
cat "$out/lintian.txt"
if [ "$rc" != 0 ] || grep -q '^E:' "$out/lintian.txt"; then
    echo "pincache: lintian reports errors (status $rc)" >&2
    exit 1
fi
echo "lintian: $(grep -c '^E:' "$out/lintian.txt") errors, $(grep -c '^W:' "$out/lintian.txt") warnings"

echo "== installed into a scratch root, on the simulated device"
root=$out/root
for deb in "$out"/*.deb; do dpkg -x "$deb" "$root"; done
# The paths the installed CLI was built with, looked up under the scratch root.
eval "$(sed -n '/^prefix=/,/^libexecdir=/p' "$root/usr/bin/pincache")"
# shellcheck disable=SC2154
PINCACHE_LIB=$root$libdir/libpincache.so PINCACHE_JSON_TOOL=$root$libexecdir/pincache/pincache-json
PINCACHE_DOCTOR_TOOL=$root$libexecdir/pincache/pincache-doctor
export PINCACHE_LIB PINCACHE_JSON_TOOL PINCACHE_DOCTOR_TOOL
for f in "$PINCACHE_LIB" "$PINCACHE_JSON_TOOL" "$PINCACHE_DOCTOR_TOOL" "$root/usr/share/man/man1/pincache.1.gz" "$root/usr/share/man/man7/pincache.7.gz"; do
    [ -f "$f" ] || { echo "pincache: the packages do not install $f" >&2; exit 1; }
done
v=$("$root/usr/bin/pincache" --version)
[ "$v" = "pincache $confver" ] || { echo "pincache: installed CLI says '$v', not 'pincache $confver'" >&2; exit 1; }

(cd _build/plain && make -s -j"$jobs" tests/sim/hello)
rep=$out/hello.json
rc=0
"$root/usr/bin/pincache" run --report "$rep" -- _build/plain/tests/sim/hello >"$out/hello.out" 2>"$out/hello.err" || rc=$?
# hello allocates one pinned block, prints one line and exits with 7.
fail=
: >"$out/doctor.out"
[ "$rc" = 7 ] || fail="exit status $rc, not 7"
[ "$(cat "$out/hello.out")" = "hello from the program" ] || fail="${fail:+$fail; }unexpected output"
[ -s "$rep" ] || fail="${fail:+$fail; }no report written"
if [ -z "$fail" ]; then
    "$root/usr/bin/pincache" report --json "$rep" >"$out/hello.report.json" || fail="pincache report failed"
fi
if [ -z "$fail" ]; then
    for field in '"pincache_version": "'"$confver"'"' '"mode": "cache"' '"cuda_used": true' \
                 '"alloc_calls": 1,' '"free_calls": 1,'; do
        grep -q "$field" "$out/hello.report.json" || fail="${fail:+$fail; }report lacks $field"
    done
fi
# doctor: the machine (it names the installed library), then hello (shared cudart).
if [ -z "$fail" ]; then
    "$root/usr/bin/pincache" doctor >"$out/doctor.out" 2>&1 || fail="pincache doctor failed"
    grep -qF "pincache:   $PINCACHE_LIB (what 'pincache run' preloads)" "$out/doctor.out" ||
        fail="${fail:+$fail; }pincache doctor does not name the installed library"
    "$root/usr/bin/pincache" doctor -- _build/plain/tests/sim/hello >>"$out/doctor.out" 2>&1 ||
        fail="${fail:+$fail; }pincache doctor -- hello failed"
    grep -qF "cudart:     shared libcudart.so.13: pincache serves" "$out/doctor.out" ||
        fail="${fail:+$fail; }pincache doctor -- hello does not see the shared cudart"
fi
if [ -n "$fail" ]; then
    cat "$out/hello.err" "$out/doctor.out" >&2
    echo "pincache: installed package on the simulated device: $fail" >&2
    exit 1
fi
"$root/usr/bin/pincache" report "$rep"
cat "$out/doctor.out"
echo "== Debian packages built, lintian-clean and working:"
for deb in "$out"/*.deb; do echo "  ${deb#"$top"/}"; done
