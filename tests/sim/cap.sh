#!/bin/sh
# cap: PINCACHE_MAX_CACHED bounds what the cache keeps, as the "driver" sees
# it (live pinned bytes in the sim), and trimming really frees; without a cap
# churning the same sizes reaches the driver rarely.  See cap.c.
. "$top_srcdir/tests/sim/common.sh"

tap_program "plain" plain "$SIM_BIN/cap" plain
if have_shim; then
	PINCACHE_MAX_CACHED=1M
	export PINCACHE_MAX_CACHED
	tap_program "shim, PINCACHE_MAX_CACHED=1M" shim "$SIM_BIN/cap" capped 1M
	unset PINCACHE_MAX_CACHED
	tap_program "shim, default cap" shim "$SIM_BIN/cap" uncapped
else
	tap_skip "shim: libpincache.so not built"
fi
tap_done
