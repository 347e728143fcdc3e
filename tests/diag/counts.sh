#!/bin/sh
# counts: on the simulated device, the exit report's numbers equal what a
# scripted program did - calls and bytes per API, hits and misses (misses are
# the real allocations the sim saw), frees that would have synchronized
# (cache mode) or did (observe mode: the sim's waiting frees), waits of
# cudaStreamSynchronize, cudaDeviceSynchronize, cudaFree, cudaHostUnregister
# and copies, copies by kind, observe mode's prediction - and the text
# summary is short and says it.  Synchronizing calls told by their duration
# (scenario syncwait): waits for a short kernel count, with their stall;
# idle calls do not, nor the process's first call, which the simulated
# context creation (SIM_CONTEXT_US) makes long.
. "$top_srcdir/tests/diag/common.sh"
diag_need

# run MODE NAME [STAGE]: the scenario under the shim, report to NAME.json
run() {
	PINCACHE_MODE=$1 PINCACHE_REPORT=$SIM_TMP/$2.json PINCACHE_STAGE=${3:-off} \
		run_prog shim "$DIAG_BIN/scenario" counts "$1" >"$SIM_TMP/$2.exp" 2>"$SIM_TMP/$2.err"
	_rc=$?
	sed 's/^/# /' "$SIM_TMP/$2.err"
	tap_check $_rc "$2: the scenario ran without CUDA errors"
	[ -s "$SIM_TMP/$2.json" ]
	tap_check $? "$2: report written"
}

run cache cache
expect_tap "cache" "$SIM_TMP/cache.json" "$SIM_TMP/cache.exp"

run observe observe
expect_tap "observe" "$SIM_TMP/observe.json" "$SIM_TMP/observe.exp"

# With staging on, pageable copies go through the ring (whose own real
# allocations the sim also sees): calls and copy kinds still add up.
run cache staged on
grep -E '^expect (copies\.|apis\.[A-Za-z]*\.calls |stats\.memcpy_calls)' "$SIM_TMP/staged.exp" >"$SIM_TMP/staged.sel"
expect_tap "staged" "$SIM_TMP/staged.json" "$SIM_TMP/staged.sel"

# The text summary on stderr: short, every line prefixed, the headline right.
for mode in cache observe; do
	PINCACHE_MODE=$mode PINCACHE_STAGE=off PINCACHE_REPORT=stderr \
		run_prog shim "$DIAG_BIN/scenario" counts $mode >/dev/null 2>"$SIM_TMP/$mode.txt"
	grep '^pincache\[' "$SIM_TMP/$mode.txt" | grep -v ': \(info\|warning\|debug\):' >"$SIM_TMP/$mode.sum"
	n=$(wc -l <"$SIM_TMP/$mode.sum")
	[ "$n" -ge 5 ] && [ "$n" -le 15 ]
	tap_check $? "$mode text: 5 to 15 lines ($n)"
	sed 's/^/# /' "$SIM_TMP/$mode.sum"
done
grep -q 'cudaFreeHost: 21 calls; 4 would have synchronized the device; 21 kept in the cache' "$SIM_TMP/cache.sum"
tap_check $? "cache text: the cudaFreeHost headline"
grep -q 'cudaFreeHost: 21 calls; 4 synchronized the device (stall [0-9.]* ms)' "$SIM_TMP/observe.sum"
tap_check $? "observe text: the cudaFreeHost headline, with the stall"
grep -q 'cache mode would have served 18 of 21 allocations from the cache and kept 21 of 21 frees' "$SIM_TMP/observe.sum"
tap_check $? "observe text: what cache mode would save"
# 2 of the 4 waited; an idle one slow enough counts too (its expectation
# above is a range then): the sentence says what the report says.
n=$(jget "$SIM_TMP/cache.json" apis.cudaStreamSynchronize.synced)
grep -q "waited for GPU work in flight: .*cudaStreamSynchronize $n of 4 calls" "$SIM_TMP/cache.sum"
tap_check $? "cache text: stream syncs that waited ($n)"

SIM_CONTEXT_US=30000 PINCACHE_REPORT=$SIM_TMP/syncwait.json \
	run_prog shim "$DIAG_BIN/scenario" syncwait 3 >"$SIM_TMP/syncwait.exp" 2>"$SIM_TMP/syncwait.err"
tap_check $? "syncwait: the scenario ran without CUDA errors"
sed 's/^/# /' "$SIM_TMP/syncwait.err"
expect_tap "syncwait" "$SIM_TMP/syncwait.json" "$SIM_TMP/syncwait.exp"

# Cache calls timed by sample (diag.h): counts exact, and a free that goes
# beyond a hit (a release that waits for a kernel) timed in full.
PINCACHE_MAX_CACHED=1M PINCACHE_REPORT=$SIM_TMP/hitslow.json \
	run_prog shim "$DIAG_BIN/scenario" hitslow 100 >"$SIM_TMP/hitslow.exp" 2>"$SIM_TMP/hitslow.err"
tap_check $? "hitslow: the scenario ran without CUDA errors, its trimming free waited"
sed 's/^/# /' "$SIM_TMP/hitslow.err"
expect_tap "hitslow" "$SIM_TMP/hitslow.json" "$SIM_TMP/hitslow.exp"
tap_done
