#!/usr/bin/env bash
# h200.sh OUTDIR [TARBALL] - everything pincache measures on a real GPU, in
# one unattended run: build from the dist tarball (no autotools needed),
# the GPU suite, the staging suite, the benchmarks, the CUPTI checks, static-cudart and driver-API programs
# (tests/driver), a PyTorch smoke test and the PyTorch jobs of tests/torch
# (seeds' experiment, DataLoader, profiler, torchrun).
# PINCACHE_H200_SECTIONS picks sections (default: all of "suite fuzz stage
# bench cupti driver smoke torch"), to fit a device call's time limit;
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
sections=" ${PINCACHE_H200_SECTIONS:-suite fuzz stage bench cupti driver smoke torch} "
[ "${PINCACHE_H200_STAGE:-1}" = 1 ] || sections=${sections/ stage / }
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

want suite && echo "== GPU suite" &&
PINCACHE_GPU_LOGDIR=$work/gpulogs timeout 300 scripts/gpu-suite.sh "$src" 2>&1 | tee "$out/gpu-suite.tap" | tail -40

if want fuzz && [ -f tests/fuzz/run-gpu.sh ]; then
    echo "== differential fuzzer: ${PINCACHE_FUZZ_SEEDS:-1000} seeds from ${PINCACHE_FUZZ_FIRST:-1}, plain against every mode"
    FUZZ_TIMEOUT=${FUZZ_TIMEOUT:-150} FUZZ_BUDGET=$(( ${PINCACHE_FUZZ_LIMIT:-400} - 30 )) \
        timeout "${PINCACHE_FUZZ_LIMIT:-400}" bash tests/fuzz/run-gpu.sh "$src" "${PINCACHE_FUZZ_SEEDS:-1000}" "${PINCACHE_FUZZ_FIRST:-1}" 2>&1 |
        tee "$out/fuzz-${PINCACHE_FUZZ_FIRST:-1}.tap" | tail -30
    cp -r tests/fuzz/gpu-cases "$work/fuzzcases" 2>/dev/null
fi

if want stage && [ -x tests/stage/run-gpu.sh ]; then
    echo "== staging suite and benchmark"
    timeout 150 tests/stage/run-gpu.sh "$src" 2>&1 | tee "$out/stage.txt" | tail -40
fi

want bench && echo "== benchmarks" &&
PINCACHE_BENCH_LOGDIR=$work/benchlogs timeout 280 scripts/bench.sh "$src" 2>&1 | tee "$out/bench.md" | tail -60

if want cupti && [ -f tests/cupti/run-gpu.sh ]; then
    echo "== CUPTI timeline"
    timeout 200 bash tests/cupti/run-gpu.sh "$src" 2>&1 | tee "$out/cupti.tap" | tail -30
    cp -r tests/cupti/gpu-run "$work/cuptilogs" 2>/dev/null
fi

if want driver && [ -f tests/driver/run-gpu.sh ]; then
    echo "== static cudart, driver API, Numba, CuPy (tests/driver)"
    timeout 200 bash tests/driver/run-gpu.sh "$src" 2>&1 | tee "$out/driver.tap" | tail -40
    cp -r tests/driver/gpu-run "$work/driverlogs" 2>/dev/null
fi

if want smoke && python3 -c 'import torch' 2>/dev/null; then
    echo "== PyTorch smoke"
    {
        python3 "$src/tests/gpu/torch_smoke.py"
        PINCACHE_REPORT=stderr LD_PRELOAD="$src/src/.libs/libpincache.so" python3 "$src/tests/gpu/torch_smoke.py"
    } > "$work/torch.txt" 2>&1
    cat "$work/torch.txt"
    a=$(grep -m1 checksum "$work/torch.txt" | awk '{print $2}')
    b=$(grep checksum "$work/torch.txt" | sed -n 2p | awk '{print $2}')
    [ -n "$a" ] && [ "$a" = "$b" ] && echo "torch: checksums identical" || echo "torch: CHECKSUMS DIFFER"
fi

if want torch && [ -f tests/torch/run-gpu.sh ]; then
    echo "== PyTorch jobs: seeds' experiment, DataLoader, profiler, torchrun (tests/torch)"
    timeout 300 bash tests/torch/run-gpu.sh "$src" 2>&1 | tee "$out/torch.tap"
    cp -r tests/torch/gpu-run "$work/torchlogs" 2>/dev/null
fi

tar -C "$work" -czf "$out/logs.tgz" gpulogs fuzzcases benchlogs cuptilogs driverlogs torchlogs torch.txt 2>/dev/null
ls -la "$out"
