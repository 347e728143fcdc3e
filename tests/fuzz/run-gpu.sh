#!/usr/bin/env bash
# run-gpu.sh BUILDDIR [NSEEDS [FIRST]] - the differential fuzzer against the real
# runtime (tests/fuzz/README.md): builds fuzz.c with the real kernels of
# backend_gpu.cu (nvcc, shared cudart, so that the shim interposes), runs
# NSEEDS seeds from FIRST (default 1000 from 1) plainly and under BUILDDIR's libpincache.so in
# every mode, and prints TAP: one point per mode, the diverging seeds, the
# first divergence shrunk to a replayable case (kept in
# BUILDDIR/tests/fuzz/gpu-cases/).  Seeds run in batches (FUZZ_BATCH,
# FUZZ_BUDGET, below), FUZZ_CHUNK seeds per process, FUZZ_JOBS processes at
# a time.  No CUDA device: "1..0 # SKIP".
set -u
unset LD_PRELOAD PINCACHE_MODE PINCACHE_REPORT
srcdir=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "${1:-.}" && pwd)
nseeds=${2:-1000}
first=${3:-1}
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
# A real GPU runs a context at a time: a few processes go further than one
# per CPU (H200: 4 processes ran 5.3 seeds/s, 16 ran 2.7).  Seeds run in
# batches of FUZZ_BATCH; no batch is begun that would end past FUZZ_BUDGET
# seconds (judged by the last batch), so a device call's time limit never
# cuts a batch's results off.  The determinism check (plain-again) is left
# out: every mode's comparison with plain would show a program that is not
# deterministic.
jobs=${FUZZ_JOBS:-4}
batch=${FUZZ_BATCH:-100}
budget=${FUZZ_BUDGET:-100000}
[ "$batch" -gt "$nseeds" ] && batch=$nseeds
chunk=${FUZZ_CHUNK:-$(( (batch + jobs - 1) / jobs ))}
echo "# $nseeds seeds from $first in batches of $batch, $(nvidia-smi -L 2>/dev/null | wc -l) device(s), $jobs processes of $chunk seeds"
start=$(date +%s)
res=$out/batches.txt
: >"$res"
s=$first last=$((first + nseeds - 1)) took=0 done_to=$((first - 1))
while [ "$s" -le "$last" ]; do
	e=$((s + batch - 1))
	[ "$e" -gt "$last" ] && e=$last
	now=$(( $(date +%s) - start ))
	if [ $((now + took)) -gt "$budget" ]; then
		echo "# budget: $now s spent, a batch takes $took s: stopping before seed $s"
		break
	fi
	t0=$(date +%s)
	PINCACHE_LIB=$lib FUZZ_JOBS=$jobs FUZZ_CHUNK=$chunk FUZZ_SKIP=${FUZZ_SKIP-plain-again} \
		FUZZ_RESET_DIV=${FUZZ_RESET_DIV:-12} FUZZ_SHRINK=${FUZZ_SHRINK:-2} FUZZ_TIMEOUT=${FUZZ_TIMEOUT:-600} \
		FUZZ_OUT=$out/gpu-cases sh "$srcdir/tests/fuzz/diff.sh" "$fz" "$s" "$e" >"$out/batch.txt" 2>&1
	took=$(( $(date +%s) - t0 ))
	sed "s/^/# [$s..$e, $took s] /" "$out/batch.txt" | grep -v '1\.\.[0-9]*$'
	grep -E '^(ok|not ok) ' "$out/batch.txt" | sed 's/^\(not ok\|ok\) [0-9]* - \([^:]*\):.*/\1|\2/' >>"$res"
	done_to=$e
	s=$((e + 1))
done
# One point per mode over every batch run.
n=0
for mode in $(cut -d'|' -f2 "$res" | awk '!seen[$0]++'); do
	n=$((n + 1))
	bad=$(grep -c "^not ok|$mode\$" "$res")
	if [ "$bad" -eq 0 ]; then
		echo "ok $n - $mode: seeds $first..$done_to ($((done_to - first + 1))), transcripts identical to plain"
	else
		echo "not ok $n - $mode: $bad batch(es) of seeds $first..$done_to diverge (above)"
	fi
done
[ "$n" -eq 0 ] && n=1 && echo "not ok 1 - no mode reported a result (see the batches above)"
echo "1..$n"
echo "# $(( $(date +%s) - start )) s"
