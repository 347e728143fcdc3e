#!/bin/sh
# order: when a pageable copy reads its source and what it waits for
# (issue 15 D1, D2 and the one-allocation range check), plainly on the
# simulated device and under the shim's staging.  See order.c.
. "$top_srcdir/tests/sim/common.sh"

unset PINCACHE_STAGE PINCACHE_STAGE_MIN PINCACHE_STAGE_RING PINCACHE_STAGE_CHUNK PINCACHE_MODE
tap_program "plain" plain "$SIM_BIN/order" plain
if have_shim; then
	tap_program "shim" shim "$SIM_BIN/order" shim
	# A ring of three 64K chunks: every staged copy wraps it.  An async
	# H2D larger than the ring hands its rest to the runtime before it has
	# read 2 MiB (the runtime's staging buffer), so the bytes are the
	# runtime's, and so are the time in the call and the hang.
	PINCACHE_STAGE_RING=192K PINCACHE_STAGE_CHUNK=64K PINCACHE_STAGE_MIN=64K \
		tap_program "shim, tiny ring" shim "$SIM_BIN/order" shim d1 eager-data nowait
else
	tap_skip "shim: libpincache.so not built"
fi
tap_done
