#!/usr/bin/env bash
# run-gpu.sh BUILDDIR - tests/sim's programs against the real runtime and
# driver, on a real GPU; TAP on stdout.  Not part of make check (CI has no
# GPU); the "sim" section of tests/gpu/sections.sh.  No CUDA device:
# "1..0 # SKIP".  Logs, transcripts and reports stay in
# BUILDDIR/tests/sim/gpu-run/.
#
#  1  fastobs.c (tests/sim/fastobs.sh's program: every question a program can
#     ask of a pinned block, issue 18) built with cc against the toolkit's
#     shared libcudart: run plainly, under the shim with PINCACHE_FAST_ALLOC=off
#     and with =on; the three transcripts (fastobs.plain.out, fastobs.off.out,
#     fastobs.on.out) must be identical, the =on report must count fast
#     blocks (stats.fast_alloc_calls > 0) and the =off one none
#  2  ownmem.c (tests/sim/ownmem.sh's program) the same way: plainly, under
#     the shim with fast blocks for every miss and with none; the counts of
#     pages that answer as pinned memory equal the plain run's
set -u
unset LD_PRELOAD PINCACHE_MODE PINCACHE_REPORT PINCACHE_TEST_NO_FENCES PINCACHE_FAST_ALLOC

srcdir=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=tests/gpu/cuda-env.sh
. "$srcdir/tests/gpu/cuda-env.sh"
pc_gpu_start sim "${1:-.}"

# shellcheck source=tests/gpu/tap.sh
. "$srcdir/tests/gpu/tap.sh"

# ---- 1. fastobs: plain, PINCACHE_FAST_ALLOC=off, =on
# The toolkit nvcc belongs to: its headers, and the folder of its libcudart
# (the binary's rpath, so that no LD_LIBRARY_PATH is needed).
home=$(cd "$(dirname "$(readlink -f "$PC_NVCC")")/.." && pwd)
libdir=
for d in "$home/lib64" "$home/lib" "$home/targets/x86_64-linux/lib" "$home/targets/sbsa-linux/lib"; do
    if compgen -G "$d/libcudart.so*" >/dev/null; then
        libdir=$d
        break
    fi
done
# build NAME: tests/sim/NAME.c against the toolkit's shared libcudart, or a
# failed point and the end of the plan
build() {
    cc -O2 -std=gnu11 -I"$home/include" -o "$out/$1" "$srcdir/tests/sim/$1.c" \
        -L"$libdir" -lcudart -Wl,-rpath,"$libdir" >"$out/build-$1.log" 2>&1 && return 0
    notok "$1: cc failed"
    sed 's/^/# /' "$out/build-$1.log" | head -n 10
    echo "1..$n"
    exit 0
}
build fastobs
# ended NAME: the run exited 0 after its last line, "done"
ended() { [ "$rc" = 0 ] && [ "$(tail -n 1 "$out/$1.out")" = "done" ]; }

run fastobs.plain 90 "$out/fastobs"
ended fastobs.plain
check $? "fastobs plain: ran to the end (exit $rc, $(wc -l <"$out/fastobs.plain.out") lines)"
grep -m 3 'entry point .*not found' "$out/fastobs.plain.out" | sed 's/^/# /'
for fast in off on; do
    run "fastobs.$fast" 90 LD_PRELOAD="$lib" PINCACHE_FAST_ALLOC="$fast" \
        PINCACHE_REPORT="$out/fastobs.$fast.json" "$out/fastobs"
    ended "fastobs.$fast"
    check $? "fastobs PINCACHE_FAST_ALLOC=$fast: ran to the end (exit $rc)"
    diff -u "$out/fastobs.plain.out" "$out/fastobs.$fast.out" >"$out/fastobs.$fast.diff"
    check $? "fastobs PINCACHE_FAST_ALLOC=$fast: every answer is the plain run's ($(grep -c '^[-+][^-+]' "$out/fastobs.$fast.diff") lines differ)"
    head -n 40 "$out/fastobs.$fast.diff" | sed 's/^/# /'
done
c=$(jnum "$out/fastobs.on.json" stats.fast_alloc_calls)
[ -n "$c" ] && [ "$c" -gt 0 ]
check $? "fastobs PINCACHE_FAST_ALLOC=on: the comparison covered fast blocks (stats.fast_alloc_calls ${c:-absent})"
c=$(jnum "$out/fastobs.off.json" stats.fast_alloc_calls)
[ -s "$out/fastobs.off.json" ] && { [ -z "$c" ] || [ "$c" = 0 ]; }
check $? "fastobs PINCACHE_FAST_ALLOC=off: a report, and no fast block in it (stats.fast_alloc_calls ${c:-absent})"
echo "# transcripts, diffs and reports: $out/fastobs.*"

# ---- 2. ownmem: pincache's own pinned memory is nothing the program sees
# or frees (tests/sim/ownmem.sh): plainly, under the shim with every miss a
# fast block (a witness) and with none; the counts of pages that answer as
# pinned memory must be the plain run's, every other point must pass, and
# the shim runs must have staged through a ring.
build ownmem
# owned NAME: the run exited 0 with no failed point; its counts line
owned() {
    [ "$rc" = 0 ] && ! grep -q '^not ok' "$out/$1.out"
    check $? "ownmem $1: every point passed (exit $rc)"
    grep '^not ok' -A 3 "$out/$1.out" | head -n 12 | sed 's/^/# /'
}
counts() { sed -n 's/^pages=[0-9]* //p' "$out/$1.out"; }
run ownmem.plain 120 "$out/ownmem" -c
owned ownmem.plain
for fast in on off; do
    run "ownmem.$fast" 120 LD_PRELOAD="$lib" PINCACHE_FAST_ALLOC="$fast" PINCACHE_FAST_ALLOC_MIN=0 \
        PINCACHE_REPORT="$out/ownmem.$fast.json" "$out/ownmem" -c
    owned "ownmem.$fast"
    [ -n "$(counts ownmem.plain)" ] && [ "$(counts "ownmem.$fast")" = "$(counts ownmem.plain)" ]
    check $? "ownmem PINCACHE_FAST_ALLOC=$fast: pages that answer as pinned: $(counts "ownmem.$fast") (plain: $(counts ownmem.plain))"
    c=$(jnum "$out/ownmem.$fast.json" stats.stage_ring_bytes_peak)
    [ -n "$c" ] && [ "$c" -gt 0 ]
    check $? "ownmem PINCACHE_FAST_ALLOC=$fast: the copies were staged through a ring (stage_ring_bytes_peak ${c:-absent})"
done
echo "1..$n"
