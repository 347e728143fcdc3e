#!/bin/sh
# drvcopy: the driver's 1D copies, reached through cuGetProcAddress as a
# static cudart reaches them (legacy and per-thread forms), are served by
# pincache's wrappers, keep their bytes and results, and each is counted
# once in the report with its bytes (issue 17: a static program's copies
# were not counted at all).
. "$top_srcdir/tests/driver/common.sh"
# Staging's mechanics: copies from freshly mapped sources staged too
# (PINCACHE_STAGE_FRESH_MIN=0; tests/stage/fresh.sh tests the rule).
PINCACHE_STAGE_FRESH_MIN=0
export PINCACHE_STAGE_FRESH_MIN

tap_program "plain" plain "$DRV_BIN/drv_copy"
if ! have_shim; then
	tap_skip "shim: libpincache.so not built"
	tap_done
	exit 0
fi
drv_shim "shim" "$SIM_TMP/copy.json" "$DRV_BIN/drv_copy"
if jcheck_ok && report_ok "$SIM_TMP/copy.json"; then
	j=$SIM_TMP/copy.json
	# drv_copy.c: 6 copies of 65536 bytes (legacy), 6 of 40000 (per-thread),
	# half of each synchronous; failed cuMemcpyHtoD of 16 and of 64512.
	tap_eq "$(jget "$j" stats.memcpy_calls)" 16 "report: every driver copy counted once"
	tap_eq "$(jget "$j" stats.memcpy_bytes)" $((8 * 65536 + 6 * 40000 + 16 + 64512)) "report: ... with its bytes"
	tap_eq "$(jget "$j" apis.cudaMemcpy.calls)" 10 "report: the synchronous ones as cudaMemcpy"
	tap_eq "$(jget "$j" apis.cudaMemcpy.bytes)" $((5 * 65536 + 3 * 40000 + 16 + 64512)) "report: ... with their bytes"
	tap_eq "$(jget "$j" apis.cudaMemcpyAsync.calls)" 6 "report: the async ones as cudaMemcpyAsync"
	tap_eq "$(jget "$j" apis.cudaMemcpyAsync.bytes)" $((3 * 65536 + 3 * 40000)) "report: ... with their bytes"
else
	tap_skip "report checks need tests/diag/jcheck (jansson)"
fi
# Staging taking copies this small: the driver's pageable copies go
# through the ring, in a process with no libcudart (the static cudart's
# way), the bytes still come back and the errors are still the driver's.
PINCACHE_STAGE_MIN=32K drv_shim "shim, staged" "$SIM_TMP/staged.json" "$DRV_BIN/drv_copy"
if jcheck_ok && report_ok "$SIM_TMP/staged.json"; then
	j=$SIM_TMP/staged.json
	# Per form: cuMemcpyHtoD, cuMemcpyHtoDAsync; cuMemcpyDtoH, cuMemcpyDtoHAsync.
	# Not the two in the created context (its streams are not the ring's).
	tap_eq "$(jget "$j" stats.stage_h2d_calls)" 4 "staged: the four pageable H2D copies"
	tap_eq "$(jget "$j" stats.stage_h2d_bytes)" $((2 * 65536 + 2 * 40000)) "staged: ... all their bytes"
	tap_eq "$(jget "$j" stats.stage_d2h_calls)" 4 "staged: the four pageable D2H copies"
	tap_eq "$(jget "$j" stats.stage_h2d_driver_calls)" 2 "staged: the copy past its allocation and the created context's left to the driver"
	tap_eq "$(jget "$j" stats.memcpy_calls)" 16 "staged: every copy still counted once"
fi
# Mode off: nothing counted, everything still forwarded.
PINCACHE_MODE=off PINCACHE_LIB_EXPECTED=1 PINCACHE_REPORT=off tap_program "mode off" shim "$DRV_BIN/drv_copy"
tap_done
