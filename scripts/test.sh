#!/bin/sh
# Set up and run pincache's test suite from a fresh clone (no GPU needed):
# installs the build dependencies, builds, runs `make check`, then the CPU
# suite under ASan+UBSan and the threaded tests under TSan, then distcheck,
# then the Debian packages (scripts/deb.sh: built, lintian, run installed).
#   scripts/test.sh            everything
#   PINCACHE_QUICK=1 scripts/test.sh   plain build and make check only
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
jobs=$(nproc 2>/dev/null || echo 2)
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}

scripts/setup.sh

build() {   # build DIR CONFIGURE-ARGS... ; then make check with $CHECK_ARGS
    dir=$1; shift
    mkdir -p "$dir"
    (cd "$dir" && "$top/configure" -q --with-cuda="$CUDA_HOME" "$@" && make -s -j"$jobs")
}

# Sum the automake summaries of a build folder into the totals.
npass=0 nfail=0 nskip=0
tally() {
    f=$1/test-suite.log
    [ -f "$f" ] || return 0
    p=$(sed -n 's/^# PASS: *//p;s/^# XFAIL: *//p' "$f" | awk '{s+=$1} END {print s+0}')
    x=$(sed -n 's/^# FAIL: *//p;s/^# XPASS: *//p;s/^# ERROR: *//p' "$f" | awk '{s+=$1} END {print s+0}')
    k=$(sed -n 's/^# SKIP: *//p' "$f" | awk '{s+=$1} END {print s+0}')
    npass=$((npass + p)) nfail=$((nfail + x)) nskip=$((nskip + k))
}

echo "== make check"
(cd _build/plain && make -s check -j"$jobs") || { cat _build/plain/test-suite.log 2>/dev/null | tail -80; exit 1; }

tally _build/plain
if [ -n "${PINCACHE_QUICK:-}" ]; then
    echo "$npass passed, $nfail failed, $nskip skipped"
    exit 0
fi

echo "== ASan+UBSan: make check"
build _build/asan --enable-sanitizer=address,undefined
(cd _build/asan && make -s check -j"$jobs") || { tail -80 _build/asan/test-suite.log; exit 1; }
tally _build/asan

echo "== TSan: threaded tests"
build _build/tsan --enable-sanitizer=thread
(cd _build/tsan && make -s check -j"$jobs" TESTS="$(cd "$top" && sed -n 's/^# tsan: //p' tests/*/Makefile.inc | tr '\n' ' ')") \
    || { tail -80 _build/tsan/test-suite.log; exit 1; }
tally _build/tsan

echo "== distcheck (the tarball must build without autotools)"
(cd _build/plain && make -s distcheck DISTCHECK_CONFIGURE_FLAGS="--with-cuda=$CUDA_HOME") >/dev/null \
    || { echo "distcheck failed"; (cd _build/plain && make distcheck DISTCHECK_CONFIGURE_FLAGS="--with-cuda=$CUDA_HOME" 2>&1 | tail -60); exit 1; }
echo "== Debian packages: build, lintian, run installed (scripts/deb.sh)"
scripts/deb.sh
echo "== all test stages passed"
echo "$npass passed, $nfail failed, $nskip skipped"
