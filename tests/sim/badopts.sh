#!/bin/sh
# badopts: bad PINCACHE_* values give one warning each on stderr ("pincache[")
# and change nothing else: the program's stdout and exit status stay its own.
# Numbers out of their declared range count as bad (one warning, the
# default), and PINCACHE_VERBOSE then shows the defaults in use.
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

	# Numbers out of range (issue 15, D7): one warning each and the default,
	# which PINCACHE_VERBOSE shows; nothing else changes.
	set -- STAGE_PIECES=0:4 STAGE_LINGER=-7:200 STAGE_CHUNK=5G:4M TRACE_EVENTS=-1:65536 \
		HEADROOM=-50:15 STAGE_THREADS=-4:0 MAX_CACHED=2000T:4G STAGE_MIN=1025T:512K \
		STAGE_RING=2T:64M STAGE_NT_MAX=9999T:32M
	for a in "$@"; do
		v=${a%%:*}
		export "PINCACHE_$v"
	done
	PINCACHE_VERBOSE=1 PINCACHE_REPORT=off run_prog shim "$SIM_BIN/hello" >"$SIM_TMP/out" 2>"$SIM_TMP/err"
	rc=$?
	for a in "$@"; do
		v=${a%%:*}
		unset "PINCACHE_${v%%=*}"
	done
	sed 's/^/# stderr: /' "$SIM_TMP/err" | grep -v '(default)$'
	tap_check "$([ "$rc" -eq 7 ]; echo $?)" "out of range: the exit status is the program's (got $rc)"
	cmp -s "$SIM_TMP/plain.out" "$SIM_TMP/out"
	tap_check $? "out of range: stdout is exactly the program's own output"
	n=$(grep -c 'warning:' "$SIM_TMP/err")
	tap_check "$([ "$n" -eq $# ]; echo $?)" "out of range: $# values, $# warnings (got $n)"
	for a in "$@"; do
		v=${a%%=*}
		n=$(grep -c "warning: .*PINCACHE_$v " "$SIM_TMP/err")
		tap_check "$([ "$n" -eq 1 ]; echo $?)" "out of range: one warning names PINCACHE_$v (got $n)"
		grep -q "^pincache\[[0-9]*\]:   PINCACHE_$v=${a#*:} (default)\$" "$SIM_TMP/err"
		tap_check $? "out of range: PINCACHE_VERBOSE shows PINCACHE_$v=${a#*:}, the default in use"
	done
else
	tap_skip "shim: libpincache.so not built"
fi
tap_done
