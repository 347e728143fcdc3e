#!/bin/sh
# simhit.sh - the cache's hit pair (cudaHostAlloc + cudaFreeHost served from
# the cache) on the simulated device, under the shim (simhit.c):
#  - what pincache asks the device on each pair, counted where the calls
#    reach the simulated runtime (SIM_CALLS=1): exactly one fence, one
#    cuCtxRecordEvent and one cuEventQuery per free (the reuse rule), and no
#    more than PAIR_BUDGET calls in all (the hit path's cost: the two
#    cuCtxGetCurrent whose context names the device (no cudaGetDevice once
#    learned for that context), the allocation's health question
#    cuCtxGetStreamPriorityRange, and the fence's two);
#  - the report counts every pair, and every allocation after the first as
#    a hit;
#  - the benchmark runs and prints the bookkeeping (the pair less the
#    fence's two calls, timed in the same process), shown here as a
#    comment: timings on a shared CI machine are no pass/fail criterion.
. "$top_srcdir/tests/diag/common.sh"
BIN=$top_builddir/tests/bench/simhit
PAIR_BUDGET=5
PAIRS=2000
diag_need

# per NAME: the calls per pair of entry point NAME ("" if none)
per() {
	awk -v n="$1" '$1 == "calls" && $2 == n { print $3 }' "$SIM_TMP/calls"
}
SIM_CALLS=1 PINCACHE_REPORT=$SIM_TMP/calls.json run_prog shim "$BIN" --calls --pairs $PAIRS \
	>"$SIM_TMP/calls" 2>"$SIM_TMP/calls.err"
rc=$?
tap_check $rc "simhit --calls ran under the shim (exit status $rc)"
[ $rc = 0 ] || sed 's/^/# stderr: /' "$SIM_TMP/calls.err"
echo "# per pair:" $(awk '$1 == "calls" { print $2 "=" $3 }' "$SIM_TMP/calls")
tap_eq "$(per cuCtxRecordEvent)" 1.00 "one context-wide record per free"
tap_eq "$(per cuEventQuery)" 1.00 "one query of it per free"
total=$(awk '$1 == "total" { print $2 }' "$SIM_TMP/calls")
if [ -n "$total" ] && awk -v t="$total" -v b="$PAIR_BUDGET" 'BEGIN { exit !(t <= b) }'; then
	tap_check 0 "pincache's own CUDA calls per hit pair: $total <= $PAIR_BUDGET"
else
	tap_check 1 "pincache's own CUDA calls per hit pair: '$total' > $PAIR_BUDGET"
fi
# 1000 warm-up pairs and PAIRS counted ones: the first allocation is the one miss.
tap_eq "$(jget "$SIM_TMP/calls.json" apis.cudaHostAlloc.calls)" $((1000 + PAIRS)) "the report counts every allocation"
tap_eq "$(jget "$SIM_TMP/calls.json" apis.cudaFreeHost.calls)" $((1000 + PAIRS)) "... and every free"
tap_eq "$(jget "$SIM_TMP/calls.json" stats.alloc_hits)" $((1000 + PAIRS - 1)) "every allocation after the first is a hit"
tap_eq "$(jget "$SIM_TMP/calls.json" stats.free_cached)" $((1000 + PAIRS)) "every free is kept in the cache"

run_prog shim "$BIN" --pairs 20000 --batch 100 >"$SIM_TMP/time" 2>"$SIM_TMP/time.err"
rc=$?
line=$(grep '^RESULT simhit ' "$SIM_TMP/time")
echo "# $line"
f() { echo "$line" | sed -n "s/.* $1=\([0-9.]*\).*/\1/p"; }
if [ $rc = 0 ] && [ -n "$(f bookkeeping_ns)" ] && [ -n "$(f ratio)" ] &&
	awk -v p="$(f pair_ns)" -v q="$(f fence_ns)" 'BEGIN { exit !(p > 0 && q > 0) }'; then
	tap_check 0 "the benchmark ran: bookkeeping $(f bookkeeping_ns) ns per pair, $(f ratio)x the fence's calls"
else
	tap_check 1 "the benchmark ran (exit status $rc)"
	sed 's/^/# stderr: /' "$SIM_TMP/time.err"
fi
tap_done
