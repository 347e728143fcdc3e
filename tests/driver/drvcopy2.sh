#!/bin/sh
# drvcopy2: the driver's other copy shapes (DtoD, 2D, 2DUnaligned, 3D, Peer,
# 3DPeer, their Async forms), reached through cuGetProcAddress as a static
# cudart reaches them (legacy and per-thread forms) and through dlsym, are
# pincache's wrappers, keep their bytes and results, and each is counted
# once in the report with its bytes: 1D device-to-device copies as the
# runtime's cudaMemcpy counts them, the other shapes as cudaMemcpyOther
# (issue 17: a static program's copies were not counted at all).
. "$top_srcdir/tests/driver/common.sh"

tap_program "plain" plain "$DRV_BIN/drv_copy2"
if ! have_shim; then
	tap_skip "shim: libpincache.so not built"
	tap_done
	exit 0
fi
drv_shim "shim" "$SIM_TMP/copy2.json" "$DRV_BIN/drv_copy2"
if jcheck_ok && report_ok "$SIM_TMP/copy2.json"; then
	j=$SIM_TMP/copy2.json
	# drv_copy2.c, per form (65536 bytes a copy legacy, 40000 per-thread):
	# cuMemcpyHtoD, cuMemcpyDtoH and cuMemcpyDtoD (cudaMemcpy),
	# cuMemcpyDtoDAsync (cudaMemcpyAsync), and 9 other shapes; then one
	# cuMemcpy2D(NULL), 0 bytes.
	n=$((65536 + 40000))
	tap_eq "$(jget "$j" stats.memcpy_calls)" 27 "report: every driver copy counted once"
	tap_eq "$(jget "$j" stats.memcpy_bytes)" $((13 * n)) "report: ... with its bytes"
	tap_eq "$(jget "$j" apis.cudaMemcpy.calls)" 6 "report: HtoD, DtoH, DtoD as cudaMemcpy"
	tap_eq "$(jget "$j" apis.cudaMemcpy.bytes)" $((3 * n)) "report: ... with their bytes"
	tap_eq "$(jget "$j" apis.cudaMemcpyAsync.calls)" 2 "report: DtoDAsync as cudaMemcpyAsync"
	tap_eq "$(jget "$j" apis.cudaMemcpyAsync.bytes)" $n "report: ... with its bytes"
	tap_eq "$(jget "$j" apis.cudaMemcpyOther.calls)" 19 "report: 2D, 3D and peer copies as cudaMemcpyOther"
	tap_eq "$(jget "$j" apis.cudaMemcpyOther.bytes)" $((9 * n)) "report: ... with their bytes"
else
	tap_skip "report checks need tests/diag/jcheck (jansson)"
fi
# Mode off: nothing counted, everything still forwarded.
PINCACHE_MODE=off PINCACHE_LIB_EXPECTED=1 PINCACHE_REPORT=off tap_program "mode off" shim "$DRV_BIN/drv_copy2"
tap_done
