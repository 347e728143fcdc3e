#!/bin/sh
# threads: with 8 threads allocating, freeing and synchronizing at once, the
# per-API counts are exact and the trace holds every call, well-formed (the
# accounting is lock-free; run under TSan too); then two waves of 8 threads
# whose frees park their blocks and whose exits give them back.
. "$top_srcdir/tests/diag/common.sh"
diag_need

for mode in cache observe; do
	PINCACHE_MODE=$mode PINCACHE_REPORT=$SIM_TMP/$mode.json PINCACHE_TRACE=$SIM_TMP/$mode.trace.json \
		run_prog shim "$DIAG_BIN/scenario" threads 8 60 2 >"$SIM_TMP/$mode.exp" 2>"$SIM_TMP/err"
	tap_check $? "$mode: 8 threads ran without CUDA errors"
	expect_tap "$mode" "$SIM_TMP/$mode.json" "$SIM_TMP/$mode.exp"
	"$DIAG_BIN/jcheck" trace "$SIM_TMP/$mode.trace.json" >"$SIM_TMP/facts" 2>&1
	tap_check $? "$mode: the trace is valid JSON"
	tap_eq "$(sed -n 's/^events //p' "$SIM_TMP/facts")" $((8 * 60 * 3 + 2 * 8 * 60 * 2)) "$mode: one event per call"
	tap_eq "$(sed -n 's/^bad //p' "$SIM_TMP/facts")" 0 "$mode: every event well-formed"
	tids=$(grep -o '"tid":[0-9]*' "$SIM_TMP/$mode.trace.json" | sort -u | wc -l)
	[ "$tids" -ge 8 ]
	tap_check $? "$mode: events carry the calling threads' ids ($tids threads)"
done
tap_done
