#!/bin/sh
# mixed: runtime (a libcudart.so.12 that calls the driver through
# cuGetProcAddress pointers) and driver calls in one process: each call is
# counted once in the report, whichever API the program used, although the
# runtime's own driver calls (allocations, frees, copies) reach pincache's
# driver wrappers too.
. "$top_srcdir/tests/driver/common.sh"
# Staging's mechanics: copies from freshly mapped sources staged too
# (PINCACHE_STAGE_FRESH_MIN=0; tests/stage/fresh.sh tests the rule).
PINCACHE_STAGE_FRESH_MIN=0
export PINCACHE_STAGE_FRESH_MIN

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
	# mixed.c's copies(): 8 runtime copies whose cudart copies through the
	# driver (a device-to-device cudaMemcpy through cuMemcpyDtoD, a
	# cudaMemcpy2D through cuMemcpy2D), and 7 driver ones (one failing), 4096 bytes each.
	tap_eq "$(jget "$j" stats.memcpy_calls)" 15 "report: runtime and driver copies counted once each"
	tap_eq "$(jget "$j" stats.memcpy_bytes)" $((15 * 4096)) "report: ... with their bytes"
	tap_eq "$(jget "$j" apis.cudaMemcpy.calls)+$(jget "$j" apis.cudaMemcpyAsync.calls)" 11+2 \
		"report: cudaMemcpy + cuMemcpyHtoD/DtoH/DtoD calls, and cudaMemcpyAsync"
	tap_eq "$(jget "$j" apis.cudaMemcpyOther.calls)" 2 "report: cudaMemcpy2D and cuMemcpy2D as other copies"
else
	tap_skip "report checks need tests/diag/jcheck (jansson)"
fi

# Staging copies this small: the runtime's through the runtime, the
# driver's through the driver (the runtime loaded beside it), each staged
# once; the one past its allocation left to the driver, its error the
# driver's alone (mixed.c checks the runtime's last error).
PINCACHE_STAGE_MIN=4K drv_shim "shim, staged" "$SIM_TMP/mixed_st.json" "$DRV_BIN/mixed" 2 2
if jcheck_ok && report_ok "$SIM_TMP/mixed_st.json"; then
	j=$SIM_TMP/mixed_st.json
	tap_eq "$(jget "$j" stats.stage_h2d_calls)+$(jget "$j" stats.stage_d2h_calls)" 5+5 \
		"staged: 3 runtime and 2 driver copies each way"
	tap_eq "$(jget "$j" stats.stage_h2d_driver_calls)" 1 "staged: the copy past its allocation left to the driver"
	tap_eq "$(jget "$j" stats.memcpy_calls)" 15 "staged: every copy counted once"
fi

# Observe mode counts a call the same whichever API it came through (issue
# 15, D9: driver frees were not counted at all).  N pairs through the
# runtime, then 1 + (N - 1) through the driver: the same counters.
N=31
if jcheck_ok; then
	PINCACHE_MODE=observe PINCACHE_REPORT=$SIM_TMP/obs_rt.json \
		tap_program "observe, runtime" shim "$DRV_BIN/mixed" $N 0
	PINCACHE_MODE=observe PINCACHE_REPORT=$SIM_TMP/obs_drv.json \
		tap_program "observe, driver" shim "$DRV_BIN/mixed" 1 $((N - 1))
	for k in stats.alloc_calls stats.alloc_bytes stats.alloc_passthrough stats.real_alloc_calls \
		stats.real_alloc_bytes stats.free_calls stats.free_passthrough stats.real_free_calls \
		stats.predict_hits stats.predict_kept apis.cudaHostAlloc.calls apis.cudaHostAlloc.real_calls \
		apis.cudaFreeHost.calls apis.cudaFreeHost.real_calls apis.cudaFreeHost.bytes; do
		tap_eq "$(jget "$SIM_TMP/obs_drv.json" $k)" "$(jget "$SIM_TMP/obs_rt.json" $k)" \
			"observe: $k through the driver as through the runtime"
	done
	tap_eq "$(jget "$SIM_TMP/obs_drv.json" stats.free_calls)" $N "observe: every free counted"
else
	tap_skip "observe checks need tests/diag/jcheck (jansson)"
fi
tap_done
