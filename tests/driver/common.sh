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
# The doubles load libcuda.so.1 by soname, as the real cudart does.  Their
# rpath finds it, except where a sanitizer's dlopen interceptor makes the
# sanitizer runtime the caller (its rpath is not ours): hence the path.
LD_LIBRARY_PATH=$DRV_BIN${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export LD_LIBRARY_PATH

drv_shim() {
	_l=$1
	_r=$2
	shift 2
	PINCACHE_LIB_EXPECTED=1 PINCACHE_REPORT=$_r tap_program "$_l" shim "$@"
}

jcheck_ok() {
	[ -x "$DIAG_BIN/jcheck" ]
}

# report_ok FILE: the report exists (the program ran under the shim)
report_ok() {
	if [ -s "$1" ]; then
		return 0
	fi
	tap_check 1 "report $(basename "$1") written"
	return 1
}
