#!/bin/sh
# mixed: runtime (a libcudart.so.12 that calls the driver through
# cuGetProcAddress pointers) and driver calls in one process: each call is
# counted once in the report, whichever API the program used, although the
# runtime's own driver calls reach pincache's driver wrappers too.
. "$top_srcdir/tests/driver/common.sh"

R=40
D=30
tap_program "plain" plain "$DRV_BIN/mixed" $R $D
if ! have_shim; then
	tap_skip "shim: libpincache.so not built"
	tap_done
	exit 0
fi
drv_shim "shim" "$SIM_TMP/mixed.json" "$DRV_BIN/mixed" $R $D
if jcheck_ok && report_ok "$SIM_TMP/mixed.json"; then
	j=$SIM_TMP/mixed.json
	tap_eq "$(jget "$j" stats.alloc_calls)" $((R + D)) "report: allocations counted once each"
	tap_eq "$(jget "$j" apis.cudaHostAlloc.calls)" $((R + D)) "report: cudaHostAlloc + cuMemHostAlloc calls"
	tap_eq "$(jget "$j" apis.cudaFreeHost.calls)" $((R + D)) "report: cudaFreeHost + cuMemFreeHost calls"
	tap_eq "$(jget "$j" stats.free_cached)" $((R + D)) "report: every free kept in the cache"
else
	tap_skip "report checks need tests/diag/jcheck (jansson)"
fi
tap_done
