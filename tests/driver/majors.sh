#!/bin/sh
# majors: libcudart.so.12 and libcudart.so.13 in one process; each major's
# references reach that major's library through pincache's versioned
# wrappers (observe mode: every call reaches a real library).
. "$top_srcdir/tests/driver/common.sh"

tap_program "plain" plain "$DRV_BIN/majors" 12 20
if have_shim; then
	PINCACHE_MODE=observe drv_shim "shim, observe" "$SIM_TMP/majors.json" "$DRV_BIN/majors" 12 20
	if jcheck_ok && report_ok "$SIM_TMP/majors.json"; then
		tap_eq "$(jget "$SIM_TMP/majors.json" apis.cudaHostAlloc.calls)" 32 "report: both majors' calls went through pincache"
	fi
else
	tap_skip "shim: libpincache.so not built"
fi
tap_done
