#!/usr/bin/env bash
# run-gpu.sh BUILDDIR [NSEEDS] - the differential fuzzer against the real
# runtime (tests/fuzz/README.md): builds fuzz.c with the real kernels of
# backend_gpu.cu (nvcc, shared cudart, so that the shim interposes), runs
# NSEEDS seeds (default 1000) plainly and under BUILDDIR's libpincache.so in
# every mode, and prints TAP: one point per mode, the diverging seeds, the
# first divergence shrunk to a replayable case (kept in
# BUILDDIR/tests/fuzz/gpu-cases/).  Seeds run in batches of FUZZ_CHUNK per
# process (a context costs ~0.3 s), FUZZ_JOBS processes at a time (default:
# the CPUs).  No CUDA device: "1..0 # SKIP".
set -u
unset LD_PRELOAD PINCACHE_MODE PINCACHE_REPORT
srcdir=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "${1:-.}" && pwd)
nseeds=${2:-1000}
# shellcheck source=tests/gpu/cuda-env.sh
. "$srcdir/tests/gpu/cuda-env.sh"
if ! pc_find_nvcc; then
	echo "1..0 # SKIP no nvcc"
	exit 0
fi
lib=$build/src/.libs/libpincache.so
out=$build/tests/fuzz
mkdir -p "$out"
fz=$out/fuzz-gpu
nv=("$PC_NVCC" -O2 -cudart shared -arch="${PC_ARCH:-sm_90}" -Xcompiler -pthread -I"$srcdir/tests")
{
	"${nv[@]}" -c -o "$out/backend_gpu.o" "$srcdir/tests/fuzz/backend_gpu.cu" &&
	"${nv[@]}" -x c -c -o "$out/fuzz.o" "$srcdir/tests/fuzz/fuzz.c" &&
	"${nv[@]}" "${PC_RPATH[@]}" -o "$fz" "$out/fuzz.o" "$out/backend_gpu.o"
} >"$out/build.log" 2>&1 || { echo "Bail out! build failed"; cat "$out/build.log"; exit 1; }
echo "# built $fz with ${nv[*]}"
"$fz" --dump 0 >/dev/null 2>&1
if [ $? -eq 77 ] || ! "$fz" 0 >/dev/null 2>&1; then
	echo "1..0 # SKIP no CUDA device"
	exit 0
fi
[ -f "$lib" ] || { echo "Bail out! $lib not built"; exit 1; }
jobs=${FUZZ_JOBS:-$(nproc)}
chunk=${FUZZ_CHUNK:-$(( (nseeds + jobs - 1) / jobs ))}
[ "$chunk" -gt 100 ] && chunk=100
echo "# $nseeds seeds, $(nvidia-smi -L 2>/dev/null | wc -l) device(s), $jobs processes of $chunk seeds"
start=$(date +%s)
PINCACHE_LIB=$lib FUZZ_JOBS=$jobs FUZZ_CHUNK=$chunk FUZZ_SHRINK=${FUZZ_SHRINK:-2} FUZZ_TIMEOUT=${FUZZ_TIMEOUT:-600} \
	FUZZ_OUT=$out/gpu-cases sh "$srcdir/tests/fuzz/diff.sh" "$fz" 1 "$nseeds"
echo "# $(( $(date +%s) - start )) s"
