#!/bin/sh
# ctypes: dlopen the (simulated) libcudart.so.13 by path and dlsym
# cudaHostAlloc on the handle, as ctypes/cffi/Numba do: under the shim the
# lookup returns pincache's wrapper and the churn is served from the cache.
. "$top_srcdir/tests/driver/common.sh"

lib=$SIM_BIN/libcudart.so.13
tap_program "plain" plain "$DRV_BIN/ctypes_rt" "$lib"
if have_shim; then
	drv_shim "shim" "$SIM_TMP/ctypes.json" "$DRV_BIN/ctypes_rt" "$lib"
	if jcheck_ok && report_ok "$SIM_TMP/ctypes.json"; then
		tap_eq "$(jget "$SIM_TMP/ctypes.json" apis.cudaHostAlloc.calls)" 64 "report: the handle's calls were counted"
	fi
else
	tap_skip "shim: libpincache.so not built"
fi
tap_done
