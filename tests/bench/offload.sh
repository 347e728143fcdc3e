#!/bin/sh
# offload.sh BUILDDIR [ROUNDS] - offload.cu (a vLLM-like batched KV offload
# loop, half its host blocks pageable) plain and under pincache, rounds
# interleaved, side by side: median ms per iteration each, their ratio, and
# whether every run printed the same checksum.  TAP-like lines, then one
# markdown row; exit 1 when a checksum differs or a run fails.
set -u
B=$(cd "${1:?usage: offload.sh BUILDDIR [ROUNDS]}" && pwd) || exit 2
R=${2:-5}
HERE=$(cd "$(dirname "$0")" && pwd)
LIB=$B/src/.libs/libpincache.so
W=$B/tests/bench/offload-run
NVCC=${NVCC:-$(command -v nvcc 2>/dev/null || echo /usr/local/cuda/bin/nvcc)}
mkdir -p "$W" || exit 2
"$NVCC" -O2 -arch=sm_90 -cudart shared -o "$W/offload" "$HERE/offload.cu" >"$W/cc.log" 2>&1 ||
	{ echo "not ok - compile offload.cu"; cat "$W/cc.log"; exit 1; }
: >"$W/plain.txt"
: >"$W/shim.txt"
bad=0
for r in $(seq "$R"); do
	timeout 120 "$W/offload" >>"$W/plain.txt" 2>>"$W/plain.err" || bad=1
	timeout 120 env LD_PRELOAD="$LIB" PINCACHE_REPORT="$W/report-$r.json" "$W/offload" \
		>>"$W/shim.txt" 2>>"$W/shim.err" || bad=1
done
med() { sed -n 's/.*ms_per_iter=\([0-9.]*\).*/\1/p' "$1" | sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
p=$(med "$W/plain.txt")
s=$(med "$W/shim.txt")
sums=$(sed -n 's/.*checksum=\([0-9a-f]*\).*/\1/p' "$W/plain.txt" "$W/shim.txt" | sort -u | wc -l)
runs=$(cat "$W/plain.txt" "$W/shim.txt" | grep -c '^OFFLOAD')
[ "$bad" -eq 0 ] && [ "$runs" -eq $((2 * R)) ] && echo "ok - $runs runs" || { echo "not ok - runs: $runs of $((2 * R))"; bad=1; }
[ "$sums" -eq 1 ] && echo "ok - one checksum over every run ($(sed -n 's/.*checksum=//p' "$W/plain.txt" | head -n 1))" ||
	{ echo "not ok - $sums different checksums"; bad=1; }
ratio=$(awk -v p="$p" -v s="$s" 'BEGIN { if (s + 0 > 0) printf "%.2f", p / s; else print "-" }')
staged=$(sed -n 's/.*"stage_h2d_calls": *\([0-9]*\).*/\1/p' "$W/report-1.json" 2>/dev/null | head -n 1)
echo "# $(head -n 1 "$W/plain.txt" | sed 's/ ms_per_iter.*//')"
echo "| offload (median of $R, ms/iteration) | plain $p | pincache $s | plain/pincache ${ratio}x | staged H2D in run 1: ${staged:-?} |"
exit "$bad"
