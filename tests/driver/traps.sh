#!/bin/sh
# traps: the dlsym hook matches exact names in CUDA libraries only, and
# keeps RTLD_NEXT relative to its caller.
. "$top_srcdir/tests/driver/common.sh"

tap_program "plain" plain "$DRV_BIN/traps" "$DRV_BIN/libtrap.so"
if have_shim; then
	tap_program "shim" shim "$DRV_BIN/traps" "$DRV_BIN/libtrap.so"
else
	tap_skip "shim: libpincache.so not built"
fi
tap_done
