#!/bin/sh
# fastobs: issue 18's fast miss path must not be observable.  fastobs.c
# asks pinned blocks every question a program can ask and prints the
# answers without addresses or timings; the transcripts of three runs must
# be identical: plainly, under pincache with PINCACHE_FAST_ALLOC=off (every
# miss a real cudaHostAlloc) and with =on (misses mapped and registered by
# pincache).  The =on run must have made fast blocks (stats.fast_alloc_calls
# > 0 in its report), the =off run none, or the comparison proves nothing.
# tests/sim/run-gpu.sh runs the same comparison on a real GPU.
. "$top_srcdir/tests/diag/common.sh"

# ran NAME: NAME's run exited 0 and got to its last line
ran() {
	[ "$(tail -n 1 "$SIM_TMP/$1")" = "done" ]
}

# same NAME TEXT: NAME's transcript is the plain one (the diff shown if not)
same() {
	diff -u "$SIM_TMP/plain" "$SIM_TMP/$1" >"$SIM_TMP/$1.diff"
	tap_check $? "$2"
	head -n 60 "$SIM_TMP/$1.diff" | sed 's/^/# /'
}

run_prog plain "$SIM_BIN/fastobs" >"$SIM_TMP/plain" 2>"$SIM_TMP/plain.err"
rc=$?
ran plain && [ "$rc" = 0 ]
tap_check $? "plain: fastobs ran to the end (exit status $rc, $(wc -l <"$SIM_TMP/plain") lines)"
sed 's/^/# stderr: /' "$SIM_TMP/plain.err" | head -n 20
if ! have_shim; then
	tap_skip "shim: libpincache.so not built"
	tap_done
	exit 0
fi

for fast in off on; do
	PINCACHE_FAST_ALLOC=$fast PINCACHE_REPORT=$SIM_TMP/$fast.json run_prog shim "$SIM_BIN/fastobs" \
		>"$SIM_TMP/$fast" 2>"$SIM_TMP/$fast.err"
	rc=$?
	ran "$fast" && [ "$rc" = 0 ]
	tap_check $? "PINCACHE_FAST_ALLOC=$fast: fastobs ran to the end (exit status $rc)"
	sed 's/^/# stderr: /' "$SIM_TMP/$fast.err" | head -n 20
	same "$fast" "PINCACHE_FAST_ALLOC=$fast: every answer is the plain run's"
done

if [ ! -x "$DIAG_BIN/jcheck" ]; then
	tap_skip "report checks need tests/diag/jcheck (jansson)"
elif [ ! -s "$SIM_TMP/on.json" ] || [ ! -s "$SIM_TMP/off.json" ]; then
	tap_check 1 "both runs wrote their reports"
else
	n=$(jget "$SIM_TMP/on.json" stats.fast_alloc_calls)
	[ "$n" != null ] && [ "$n" -gt 0 ]
	tap_check $? "PINCACHE_FAST_ALLOC=on: the comparison covered fast blocks (stats.fast_alloc_calls $n)"
	n=$(jget "$SIM_TMP/off.json" stats.fast_alloc_calls)
	[ "$n" = null ] || [ "$n" = 0 ]
	tap_check $? "PINCACHE_FAST_ALLOC=off: no fast block (stats.fast_alloc_calls $n)"
	n=$(jget "$SIM_TMP/off.json" stats.real_alloc_calls)
	[ "$n" != null ] && [ "$n" -gt 0 ]
	tap_check $? "PINCACHE_FAST_ALLOC=off: the misses were real cudaHostAlloc calls (stats.real_alloc_calls $n)"
fi
tap_done
