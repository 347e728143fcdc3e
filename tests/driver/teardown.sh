#!/bin/sh
# teardown: blocks of a context destroyed by cuDevicePrimaryCtxReset, by the
# cuDevicePrimaryCtxRelease that drops its last retain, or by cuCtxDestroy
# are never handed out again, plain and under the shim (tests/driver/teardown.c).
. "$top_srcdir/tests/driver/common.sh"

tap_program "plain" plain "$DRV_BIN/teardown"
if have_shim; then
	drv_shim "shim" "$SIM_TMP/teardown.json" "$DRV_BIN/teardown"
	if jcheck_ok && report_ok "$SIM_TMP/teardown.json"; then
		# Frees in the primary context are cached (A and B's first, and the
		# three after the teardowns); C's, in the created context, is not.
		tap_eq "$(jget "$SIM_TMP/teardown.json" stats.free_cached)" 5 "report: the frees in the primary context were cached, the one in the created context not"
	else
		tap_skip "report checks need tests/diag/jcheck (jansson)"
	fi
else
	tap_skip "shim: libpincache.so not built"
fi
tap_done
