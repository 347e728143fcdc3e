# common.sh - sourced by the tests/sim/*.sh TAP scripts (POSIX sh).
#
#   run_prog plain|shim PROG ARGS...   run a test program (bounded in time);
#                                      "shim": with LD_PRELOAD=$PINCACHE_LIB
#                                      (and $PINCACHE_PRELOAD_EXTRA after it);
#                                      with SIM_EXPECT_RACES=1 set, races are
#                                      the point of the run and ThreadSanitizer
#                                      is told not to report them
#   shim_preload PROG                  the LD_PRELOAD value run_prog gives PROG
#                                      under the shim (a sanitizer runtime it
#                                      links first), for scripts that start it
#                                      through another program
#   tap_program LABEL plain|shim PROG ARGS...
#                                      run a program that prints TAP and
#                                      re-number its points into this script's
#                                      stream, each prefixed with LABEL; a crash,
#                                      a short plan or a bad exit status is a
#                                      failed point too; its stderr becomes
#                                      "# " comments
#   tap_check STATUS TEXT              one point, ok when STATUS is 0
#   tap_skip TEXT                      one skipped point
#   have_shim                          the library is built
#   report_stat NAME FILE              a number from a JSON report ("" when
#                                      absent)
#   check_stat FILE NAME OP VALUE TEXT one point: the report's NAME OP VALUE
#   tap_done                           print the plan (at the end)
#
# Programs live in $top_builddir/tests/sim and find the simulated
# libcudart.so.13 through their rpath; make check exports top_srcdir,
# top_builddir and PINCACHE_LIB.

: "${top_srcdir:?run this through make check}"
: "${top_builddir:?run this through make check}"
SIM_BIN=$top_builddir/tests/sim
SIM_SRC=$top_srcdir/tests/sim
SIM_TMP=$(mktemp -d "${TMPDIR:-/tmp}/pincache-sim.XXXXXX") || exit 99
trap 'rm -rf "$SIM_TMP"' EXIT
# The node's shared file (PINCACHE_NODE_SHARE) in a folder of this script's
# own: tests never meet each other's, nor a real one in /dev/shm.
PINCACHE_NODE_SHARE_DIR=$SIM_TMP/shm
mkdir -p "$PINCACHE_NODE_SHARE_DIR" || exit 99
export PINCACHE_NODE_SHARE_DIR
SIM_TIMEOUT=${SIM_TIMEOUT:-300}
tap_n=0

have_shim() {
	[ -n "${PINCACHE_LIB:-}" ] && [ -f "$PINCACHE_LIB" ]
}

# A sanitizer runtime the program links, which must come first in LD_PRELOAD.
san_runtime() {
	ldd "$1" 2>/dev/null | awk '$1 ~ /^lib(asan|tsan)\.so/ { print $3; exit }'
}

shim_preload() {
	_rt=$(san_runtime "$1")
	echo "${_rt:+$_rt }$PINCACHE_LIB${PINCACHE_PRELOAD_EXTRA:+ $PINCACHE_PRELOAD_EXTRA}"
}

run_prog() {
	_mode=$1
	shift
	if [ "$_mode" = shim ]; then
		set -- env LD_PRELOAD="$(shim_preload "$1")" "$@"
	fi
	if [ "${SIM_EXPECT_RACES:-0}" = 1 ]; then
		set -- env TSAN_OPTIONS="${TSAN_OPTIONS:+$TSAN_OPTIONS:}report_bugs=0" "$@"
	fi
	if command -v timeout >/dev/null 2>&1; then
		timeout -k 5 "$SIM_TIMEOUT" "$@"
	else
		"$@"
	fi
}

tap_check() {
	tap_n=$((tap_n + 1))
	if [ "$1" -eq 0 ]; then
		echo "ok $tap_n - $2"
	else
		echo "not ok $tap_n - $2"
	fi
}

tap_skip() {
	tap_n=$((tap_n + 1))
	echo "ok $tap_n # SKIP $1"
}

tap_program() {
	_label=$1
	shift
	run_prog "$@" >"$SIM_TMP/out" 2>"$SIM_TMP/err"
	_rc=$?
	awk -v label="$_label" -v n="$tap_n" -v rc="$_rc" '
		/^1\.\.[0-9]+/ {
			plan = substr($1, 4) + 0; havePlan = 1
			why = $0; sub(/^[^#]*#[ \t]*(SKIP|skip)?[ \t]*/, "", why)
			next
		}
		/^(not )?ok/ {
			st = ($1 == "ok") ? "ok" : "not ok"
			sub(/^(not )?ok[ \t]*[0-9]*[ \t]*(- )?/, "")
			n++; seen++; bad += (st != "ok")
			print st " " n " - " label ": " $0
			next
		}
		/^#/ { print; next }
		{ print "# " $0 }
		END {
			if (havePlan && plan == 0 && rc == 0)
				print "ok " ++n " - " label " # SKIP " why
			else if (!havePlan || seen < plan)
				print "not ok " ++n " - " label ": ran " seen + 0 " of " (havePlan ? plan : "?") " tests (exit status " rc ")"
			else if (rc != 0 && !bad)
				print "not ok " ++n " - " label ": exit status " rc
		}' "$SIM_TMP/out" >"$SIM_TMP/tap"
	sed 's/^/# stderr: /' "$SIM_TMP/err" | head -n 200
	cat "$SIM_TMP/tap"
	tap_n=$((tap_n + $(grep -c -E '^(not )?ok ' "$SIM_TMP/tap")))
}

report_stat() {
	sed -n "s/.*\"$1\": *\([0-9][0-9]*\).*/\1/p" "$2" | head -n 1
}

check_stat() {
	_v=$(report_stat "$2" "$1")
	[ -n "$_v" ] && test "$_v" "$3" "$4"
	tap_check $? "$5 ($2 = ${_v:-missing})"
}

tap_done() {
	echo "1..$tap_n"
}

# tap_broken WHAT VAR=VALUE PROG [ARGS...]: the expected failure of an
# integrity program (listed in XFAIL_TESTS): under the shim, with VAR=VALUE
# breaking reuse safety, PROG's kernels must see other iterations' bytes; its
# "mismatches=N" says how many.  The point is "not ok" when they do; "ok" (an
# XPASS) means WHAT cannot see that broken fence; a program that does not
# finish bails out.
tap_broken() {
	_what=$1
	_how=$2
	shift 2
	if ! have_shim; then
		tap_skip "libpincache.so not built"
		tap_done
		return 0
	fi
	SIM_EXPECT_RACES=1
	export "$_how"
	run_prog shim "$@" >"$SIM_TMP/out" 2>"$SIM_TMP/err"
	_rc=$?
	sed 's/^/# /' "$SIM_TMP/out"
	sed 's/^/# stderr: /' "$SIM_TMP/err" | head -n 50
	_mm=$(sed -n 's/.*mismatches=\([0-9]*\).*/\1/p' "$SIM_TMP/out")
	if [ "$_rc" -gt 1 ] || [ -z "$_mm" ]; then
		echo "Bail out! $(basename "$1") did not run to the end with $_how (exit status $_rc)"
		exit 1
	fi
	if [ "$_mm" -gt 0 ]; then
		tap_check 1 "$_how: $_mm kernels saw another iteration's bytes (the expected failure)"
	else
		tap_check 0 "$_how: no kernel saw corruption, so $_what cannot detect this broken fence"
	fi
	tap_done
}

# tap_nofences WHAT PROG [ARGS...]: tap_broken with PINCACHE_TEST_NO_FENCES=1
# (freed blocks handed out again at once).
tap_nofences() {
	_w=$1
	shift
	tap_broken "$_w" PINCACHE_TEST_NO_FENCES=1 "$@"
}
