#!/bin/sh
# badopts: bad PINCACHE_* values give one warning each on stderr ("pincache[")
# and change nothing else: the program's stdout and exit status stay its own.
. "$top_srcdir/tests/sim/common.sh"

run_prog plain "$SIM_BIN/hello" >"$SIM_TMP/plain.out" 2>"$SIM_TMP/plain.err"
rc=$?
[ "$rc" -eq 7 ] && [ "$(cat "$SIM_TMP/plain.out")" = "hello from the program" ]
tap_check $? "plain: the program prints its line and exits 7 (exit status $rc)"

if have_shim; then
	PINCACHE_MAX_CACHED=banana PINCACHE_MODE=turbo PINCACHE_VERBOSE=maybe PINCACHE_REPORT=off
	export PINCACHE_MAX_CACHED PINCACHE_MODE PINCACHE_VERBOSE PINCACHE_REPORT
	run_prog shim "$SIM_BIN/hello" >"$SIM_TMP/out" 2>"$SIM_TMP/err"
	rc=$?
	unset PINCACHE_MAX_CACHED PINCACHE_MODE PINCACHE_VERBOSE PINCACHE_REPORT
	sed 's/^/# stderr: /' "$SIM_TMP/err"
	tap_check "$([ "$rc" -eq 7 ]; echo $?)" "shim: the exit status is the program's (got $rc, want 7)"
	cmp -s "$SIM_TMP/plain.out" "$SIM_TMP/out"
	tap_check $? "shim: stdout is exactly the program's own output"
	for v in MAX_CACHED MODE VERBOSE; do
		n=$(grep -c "PINCACHE_$v" "$SIM_TMP/err")
		tap_check "$([ "$n" -eq 1 ]; echo $?)" "shim: exactly one warning names PINCACHE_$v (got $n)"
	done
	n=$(grep -c -v '^pincache\[' "$SIM_TMP/err")
	tap_check "$([ "$n" -eq 0 ]; echo $?)" "shim: every stderr line starts with 'pincache[' ($n do not)"
	n=$(wc -l <"$SIM_TMP/err")
	tap_check "$([ "$n" -eq 3 ]; echo $?)" "shim: stderr holds exactly the three warnings (got $n lines)"
else
	tap_skip "shim: libpincache.so not built"
fi
tap_done
