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
if ! cc -O2 -std=gnu11 -I"$home/include" -o "$out/fastobs" "$srcdir/tests/sim/fastobs.c" \
    -L"$libdir" -lcudart -Wl,-rpath,"$libdir" >"$out/build-fastobs.log" 2>&1; then
    notok "fastobs: cc failed"
    sed 's/^/# /' "$out/build-fastobs.log" | head -n 10
    echo "1..$n"
    exit 0
fi
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
echo "1..$n"
