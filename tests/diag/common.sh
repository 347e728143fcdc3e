# common.sh - sourced by the tests/diag/*.sh TAP scripts, after
# tests/sim/common.sh (run_prog, tap_program, tap_check, $SIM_TMP).
#
#   diag_need              skip the whole script without the shim or jcheck
#   jget FILE PATH         one value of a JSON document
#   expect_tap LABEL REPORT EXPECTATIONS
#                          the expectations ("expect PATH VALUE" lines) as
#                          TAP points against the report
#   tap_eq GOT WANT TEXT   one point: GOT equals WANT (diagnostic otherwise)

. "$top_srcdir/tests/sim/common.sh"
DIAG_BIN=$top_builddir/tests/diag

diag_need() {
	if ! have_shim; then
		echo "1..0 # SKIP libpincache.so not built"
		exit 0
	fi
	if [ ! -x "$DIAG_BIN/jcheck" ]; then
		echo "1..0 # SKIP tests/diag/jcheck needs jansson (Debian: libjansson-dev)"
		exit 0
	fi
}

jget() {
	"$DIAG_BIN/jcheck" get "$1" "$2"
}

expect_tap() {
	tap_program "$1" plain "$DIAG_BIN/jcheck" expect "$2" <"$3"
}

tap_eq() {
	if [ "$1" = "$2" ]; then
		tap_check 0 "$3 ($1)"
	else
		tap_check 1 "$3"
		echo "# got '$1', want '$2'"
	fi
}
