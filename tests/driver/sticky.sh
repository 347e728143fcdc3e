#!/bin/sh
# sticky: after a kernel fault, the driver API the static cudart uses
# answers 719 for an allocation the cache could serve (with a NULL pointer)
# and for a free of a live block, as the H200 does (issue 15, D10).
. "$top_srcdir/tests/driver/common.sh"

tap_program "plain" plain "$DRV_BIN/drv_sticky"
if have_shim; then
	tap_program "shim" shim "$DRV_BIN/drv_sticky"
else
	tap_skip "shim: libpincache.so not built"
fi
tap_done
