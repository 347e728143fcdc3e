#!/bin/sh
# trace: PINCACHE_TRACE writes valid Chrome Trace Event JSON with one
# complete event per accounted call (as many as the report counts), the
# synchronizing ones highlighted, cache hits and avoided syncs marked; a
# small ring keeps the latest events and counts the rest; a forked child
# writes its own trace only if it made CUDA calls; exit() from a second
# thread still writes both files.
. "$top_srcdir/tests/diag/common.sh"
diag_need

CALLS="apis.cudaHostAlloc.calls+apis.cudaMallocHost.calls+apis.cudaFreeHost.calls+apis.cudaHostRegister.calls+apis.cudaHostUnregister.calls+apis.cudaMemcpy.calls+apis.cudaMemcpyAsync.calls+apis.cudaMemcpyOther.calls+apis.cudaStreamSynchronize.calls+apis.cudaDeviceSynchronize.calls+apis.cudaFree.calls"
SYNCED=$(echo "$CALLS" | sed 's/\.calls/.synced/g')
HITS="apis.cudaHostAlloc.hits+apis.cudaMallocHost.hits+apis.cudaFreeHost.hits"

# fact NAME: a line of jcheck trace's output
fact() {
	sed -n "s/^$1 //p" "$SIM_TMP/facts"
}

# traced MODE NAME [EVENTS]
traced() {
	PINCACHE_MODE=$1 PINCACHE_STAGE=off PINCACHE_REPORT=$SIM_TMP/$2.json \
		PINCACHE_TRACE=$SIM_TMP/$2.trace.json PINCACHE_TRACE_EVENTS=${3:-65536} \
		run_prog shim "$DIAG_BIN/scenario" counts "$1" >/dev/null 2>"$SIM_TMP/err"
	tap_check $? "$2: the scenario ran"
	"$DIAG_BIN/jcheck" trace "$SIM_TMP/$2.trace.json" >"$SIM_TMP/facts" 2>&1
	tap_check $? "$2: the trace is valid JSON"
	sed 's/^/# /' "$SIM_TMP/facts"
	calls=$(jget "$SIM_TMP/$2.json" "$CALLS")
}

for mode in cache observe; do
	traced $mode $mode
	tap_eq "$(fact events)" "$calls" "$mode: one complete event per accounted call"
	tap_eq "$(fact bad)" 0 "$mode: every event has name, ph, pid, tid, ts, dur and args.bytes"
	tap_eq "$(fact meta)" 1 "$mode: the process is named"
	tap_eq "$(fact sync)" "$(jget "$SIM_TMP/$mode.json" "$SYNCED")" "$mode: calls that synchronized are in category sync"
	tap_eq "$(fact terrible)" "$(fact sync)" "$mode: ... and highlighted (cname terrible)"
	tap_eq "$(fact name.cudaFreeHost)" "$(jget "$SIM_TMP/$mode.json" apis.cudaFreeHost.calls)" "$mode: cudaFreeHost events"
	tap_eq "$(fact dropped)" 0 "$mode: nothing dropped"
done
traced cache cache
tap_eq "$(fact avoided)" "$(jget "$SIM_TMP/cache.json" stats.syncs_avoided)" "cache: frees that avoided a sync are marked"
tap_eq "$(fact hits)" "$(jget "$SIM_TMP/cache.json" "$HITS")" "cache: cache hits are marked"

# A ring of 16: the latest 16 calls, the rest counted as dropped.
traced cache small 16
tap_eq "$(fact events)" 16 "ring of 16: 16 events written"
tap_eq "$(fact dropped)" $((calls - 16)) "ring of 16: the others counted as dropped"
tap_eq "$(jget "$SIM_TMP/small.json" stats.trace_dropped)" $((calls - 16)) "ring of 16: the report counts them too"

# Fork: the child writes a trace (and report) only if it made CUDA calls.
# (LeakSanitizer in a forked child of a threaded process reports the
# parent's fence objects as leaked - tests/sim/fork.sh shows it too - so it
# is off for these runs.)
for child in none cuda; do
	mkdir -p "$SIM_TMP/fork-$child"
	ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" \
	PINCACHE_REPORT=$SIM_TMP/fork-$child/r-%p.json PINCACHE_TRACE=$SIM_TMP/fork-$child/t-%p.json \
		run_prog shim "$DIAG_BIN/scenario" fork $child >"$SIM_TMP/fork.out" 2>&1
	tap_check $? "fork ($child): parent and child ran"
	cpid=$(sed -n 's/^child //p' "$SIM_TMP/fork.out")
	n=$(ls "$SIM_TMP/fork-$child" | grep -c '^t-')
	want=1
	[ $child = cuda ] && want=2
	tap_eq "$n" $want "fork ($child): trace files"
	parent=$(ls "$SIM_TMP/fork-$child" | grep '^t-' | grep -v "t-$cpid.json" | head -n 1)
	"$DIAG_BIN/jcheck" trace "$SIM_TMP/fork-$child/$parent" >"$SIM_TMP/facts" 2>&1
	tap_eq "$(fact events)" 20 "fork ($child): the parent's trace has its own 20 calls"
	if [ $child = cuda ]; then
		"$DIAG_BIN/jcheck" trace "$SIM_TMP/fork-$child/t-$cpid.json" >"$SIM_TMP/facts" 2>&1
		tap_eq "$(fact events)" 1 "fork (cuda): the child's trace has its one call"
		tap_eq "$(jget "$SIM_TMP/fork-$child/r-$cpid.json" apis.cudaHostAlloc.calls)" 1 \
			"fork (cuda): the child's report has its one call"
	fi
done

# exit() from a second thread while the main thread keeps calling.
PINCACHE_REPORT=$SIM_TMP/exit.json PINCACHE_TRACE=$SIM_TMP/exit.trace.json \
	run_prog shim "$DIAG_BIN/scenario" exit-thread >/dev/null 2>&1
tap_check $? "exit() from a thread: exit status 0"
"$DIAG_BIN/jcheck" trace "$SIM_TMP/exit.trace.json" >"$SIM_TMP/facts" 2>&1
tap_check $? "exit() from a thread: the trace is valid JSON"
tap_eq "$(fact bad)" 0 "exit() from a thread: every event well-formed"
n=$(jget "$SIM_TMP/exit.json" apis.cudaHostAlloc.calls)
[ "${n:-0}" -ge 20 ]
tap_check $? "exit() from a thread: the report counts the exiting thread's 20 allocations ($n)"
tap_done
