#!/bin/sh
# regfork: fork() with registered memory live.  The report counts the forks
# that copied it; PINCACHE_REGISTER_DONTFORK=1 keeps fork() from copying the
# range's whole pages while it is registered (a child that reads one faults),
# leaves the partial first page (shared with other data) alone, and gives the
# pages back to fork() at cudaHostUnregister.  See regfork.c.
. "$top_srcdir/tests/diag/common.sh"

# expect LABEL NEIGHBOUR INSIDE AFTER: the children's exit codes in $SIM_TMP/out
expect() {
	got=$(sed -n 's/^child_neighbour=\([-0-9]*\) child_inside=\([-0-9]*\) child_after=\([-0-9]*\)$/\1 \2 \3/p' "$SIM_TMP/out")
	[ "$got" = "$2 $3 $4" ]
	tap_check $? "$1: children reading the neighbour byte, the range, the range after unregistering exited $got (expected $2 $3 $4; 42 = fault)"
}

run_prog plain "$DIAG_BIN/regfork" >"$SIM_TMP/out" 2>"$SIM_TMP/err"
tap_check $? "plain: ran"
expect "plain" 0 0 0
if ! have_shim; then
	tap_skip "shim: libpincache.so not built"
	tap_done
	exit 0
fi

PINCACHE_REPORT="$SIM_TMP/default.json" run_prog shim "$DIAG_BIN/regfork" >"$SIM_TMP/out" 2>"$SIM_TMP/err"
tap_check $? "shim: ran"
expect "shim" 0 0 0
PINCACHE_REPORT="$SIM_TMP/dontfork.json" PINCACHE_REGISTER_DONTFORK=1 \
	run_prog shim "$DIAG_BIN/regfork" >"$SIM_TMP/out" 2>"$SIM_TMP/err"
tap_check $? "shim, PINCACHE_REGISTER_DONTFORK=1: ran"
expect "shim, PINCACHE_REGISTER_DONTFORK=1" 0 42 0
if [ -x "$DIAG_BIN/jcheck" ] && [ -s "$SIM_TMP/default.json" ] && [ -s "$SIM_TMP/dontfork.json" ]; then
	j=$SIM_TMP/default.json
	tap_eq "$(jget "$j" stats.forks)" 3 "report: 3 forks"
	tap_eq "$(jget "$j" stats.forks_registered)" 2 "report: 2 of them copied registered memory"
	tap_eq "$(jget "$j" stats.fork_registered_bytes)" $((2 * 1048576)) "report: 2 MiB copied in all"
	grep -q 'forks copied 2.0 MiB of registered memory' "$j"
	tap_check $? "report: the recommendation names the forks and the bytes"
	j=$SIM_TMP/dontfork.json
	tap_eq "$(jget "$j" stats.forks)" 3 "PINCACHE_REGISTER_DONTFORK=1: 3 forks"
	tap_eq "$(jget "$j" stats.registered_dontfork_bytes_peak)" 1048576 "PINCACHE_REGISTER_DONTFORK=1: the range was marked (its registered bytes)"
	tap_eq "$(jget "$j" stats.forks_registered)" 0 "PINCACHE_REGISTER_DONTFORK=1: no fork copied registered memory"
	tap_eq "$(jget "$j" stats.fork_registered_bytes)" 0 "PINCACHE_REGISTER_DONTFORK=1: 0 bytes copied"
	tap_eq "$(jget "$j" stats.registered_dontfork_bytes)" 0 "PINCACHE_REGISTER_DONTFORK=1: nothing marked after cudaHostUnregister"
else
	tap_skip "report checks need tests/diag/jcheck (jansson)"
fi
tap_done
