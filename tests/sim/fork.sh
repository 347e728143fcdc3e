#!/bin/sh
# fork: children of a process that used CUDA.  A child that makes no CUDA call
# exits promptly and writes no report; a child that calls CUDA gets the
# runtime's cudaErrorInitializationError, never one of the parent's cached
# blocks.  See fork.c.
. "$top_srcdir/tests/sim/common.sh"

tap_program "plain" plain "$SIM_BIN/fork"
if have_shim; then
	PINCACHE_REPORT="$SIM_TMP/report.%p.json"
	export PINCACHE_REPORT
	tap_program "shim" shim "$SIM_BIN/fork"
	unset PINCACHE_REPORT
	parent=$(sed -n 's/^parent_pid=//p' "$SIM_TMP/out")
	child=$(sed -n 's/^child_a_pid=//p' "$SIM_TMP/out")
	echo "# reports: $(cd "$SIM_TMP" && ls report.* 2>/dev/null | tr '\n' ' ')"
	[ -n "$child" ] && [ ! -e "$SIM_TMP/report.$child.json" ]
	tap_check $? "shim: the child without CUDA calls wrote no report (report.$child.json)"
	[ -n "$parent" ] && [ -e "$SIM_TMP/report.$parent.json" ]
	tap_check $? "shim: the parent wrote report.$parent.json (so the check above means something)"
else
	tap_skip "shim: libpincache.so not built"
fi
tap_done
