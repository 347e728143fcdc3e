#!/usr/bin/env bash
# h200.sh OUTDIR [TARBALL] - everything pincache measures on a real GPU, in
# one unattended run: build from the dist tarball (no autotools needed),
# the GPU suite, the staging suite, the benchmarks, the CUPTI checks, static-cudart and driver-API programs
# (tests/driver), make check's tests/sim programs on the real runtime
# (tests/sim), a PyTorch smoke test and the PyTorch jobs of tests/torch
# (seeds' experiment, DataLoader, profiler, torchrun): the sections of
# tests/gpu/sections.sh, which make check-gpu runs too (all but bench, cold,
# issue 18's benchmark, and node, issue 19's).
# PINCACHE_H200_SECTIONS picks sections (default: all of them, "suite fuzz
# stage bench cold node cupti driver sim smoke torch"), to fit a device call's time limit;
# PINCACHE_H200_REUSE=1 keeps the build of an earlier call on the same
# machine.  PINCACHE_FUZZ_SEEDS: the fuzzer's seeds (default 1000), from
# PINCACHE_FUZZ_FIRST (default 1), in batches begun only while they fit in
# PINCACHE_FUZZ_LIMIT seconds (default 400).
# Logs go to OUTDIR (at most a handful of files).  Used as:
#   make dist && cp pincache-*.tar.gz .gpu/ && cp /usr/include/ut*.h .gpu/include/
#   (and for the CLI's merge: cp /usr/include/jansson*.h .gpu/include/ and
#   cp -a /usr/lib/x86_64-linux-gnu/libjansson.so* .gpu/lib/)
#   (on the GPU machine) scripts/h200.sh "$OUT" .gpu/pincache-*.tar.gz
set -u
out=${1:?usage: h200.sh OUTDIR [TARBALL]}
want() { case $sections in *" $1 "*) return 0 ;; esac; return 1; }
tarball=${2:-$(ls .gpu/pincache-*.tar.gz 2>/dev/null | head -1)}
repo=$(pwd)
mkdir -p "$out"
out=$(cd "$out" && pwd)
work=${TMPDIR:-/tmp}/pincache-h200
reuse=
if [ "${PINCACHE_H200_REUSE:-0}" = 1 ] && [ -f "$work"/pincache-*/src/.libs/libpincache.so ]; then
    reuse=1
else
    rm -rf "$work" && mkdir -p "$work"
    tar -C "$work" -xzf "$tarball" || exit 1
fi
cd "$work"/pincache-* || exit 1
src=$(pwd)

{
    date -u '+%Y-%m-%d %H:%M UTC'
    nvidia-smi --query-gpu=name,driver_version,pcie.link.gen.current,pcie.link.width.current --format=csv,noheader
    nvcc --version | tail -1
    nproc
} > "$out/machine.txt" 2>&1

echo "== build"
# .gpu/include: uthash (and jansson) headers; .gpu/lib: libjansson for the
# CLI's report/merge, when carried (the GPU machine has neither package).
ldflags=
[ -d "$repo/.gpu/lib" ] && ldflags="-L$repo/.gpu/lib -Wl,-rpath,$repo/.gpu/lib"
if [ -n "$reuse" ]; then
    echo "(reusing the build in $src)"
elif ! { ./configure CPPFLAGS="-I$repo/.gpu/include" LDFLAGS="$ldflags" && make -j"$(nproc)"; } > "$out/build.log" 2>&1; then
    tail -40 "$out/build.log"
    exit 1
fi

# shellcheck source=tests/gpu/sections.sh
. "$src/tests/gpu/sections.sh"
sections=" ${PINCACHE_H200_SECTIONS:-$PC_GPU_SECTIONS} "
[ "${PINCACHE_H200_STAGE:-1}" = 1 ] || sections=${sections/ stage / }
srcdir=$src builddir=$src
for s in $PC_GPU_SECTIONS; do
    want "$s" && pc_gpu_section "$s"
done

tar -C "$work" -czf "$out/logs.tgz" gpulogs fuzzcases benchlogs coldlogs nodelogs cuptilogs driverlogs simlogs torchlogs torch.txt 2>/dev/null
ls -la "$out"
