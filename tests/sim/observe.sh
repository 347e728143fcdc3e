#!/bin/sh
# observe: with PINCACHE_MODE=observe every allocation and free reaches the
# driver exactly as the program made it; with PINCACHE_MODE=cache far fewer do.
. "$top_srcdir/tests/sim/common.sh"

tap_program "plain" plain "$SIM_BIN/observe" equal
if have_shim; then
	PINCACHE_MODE=observe
	export PINCACHE_MODE
	tap_program "shim, PINCACHE_MODE=observe" shim "$SIM_BIN/observe" equal
	PINCACHE_MODE=cache
	tap_program "shim, PINCACHE_MODE=cache" shim "$SIM_BIN/observe" fewer
	unset PINCACHE_MODE
else
	tap_skip "shim: libpincache.so not built"
fi
tap_done
