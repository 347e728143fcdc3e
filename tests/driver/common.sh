# common.sh - sourced by the tests/driver/*.sh TAP scripts: tests/sim's and
# tests/diag's helpers (run_prog, tap_program, tap_check, jget), and
#
#   drv_shim LABEL REPORT PROG ARGS...  run PROG under the shim as a TAP
#                                       program, its JSON report to REPORT,
#                                       with PINCACHE_LIB_EXPECTED=1 (programs
#                                       check what the shim must change)
#   jcheck_ok                           jcheck is built (needs jansson)
. "$top_srcdir/tests/diag/common.sh"
DRV_BIN=$top_builddir/tests/driver

drv_shim() {
	_l=$1
	_r=$2
	shift 2
	PINCACHE_LIB_EXPECTED=1 PINCACHE_REPORT=$_r tap_program "$_l" shim "$@"
}

jcheck_ok() {
	[ -x "$DIAG_BIN/jcheck" ]
}
