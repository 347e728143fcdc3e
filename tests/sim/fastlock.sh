#!/bin/sh
# fastlock: a cache miss made as a fast block never waits for another
# thread's staged copy (which may be waiting for the allocating thread):
# plainly, and under the shim with the 160 MiB copy staged.
. "$top_srcdir/tests/sim/common.sh"

tap_program "plain" plain "$SIM_BIN/fastlock"
if have_shim; then
	PINCACHE_STAGE=on PINCACHE_FAST_ALLOC=on tap_program "shim" shim "$SIM_BIN/fastlock"
else
	tap_skip "shim: libpincache.so not built"
fi
tap_done
