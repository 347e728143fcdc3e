#!/bin/sh
# integrity: a freed pinned block is handed out again only after the GPU work
# queued before the free (copies, kernels, zero-copy reads) has run.  One
# thread, several blocking and non-blocking streams; see integrity.c.
. "$top_srcdir/tests/sim/common.sh"

SIM_EXPECT_RACES=1
tap_program "self-check" plain "$SIM_BIN/integrity" -u
SIM_EXPECT_RACES=0
tap_program "plain" plain "$SIM_BIN/integrity" -c 0
if have_shim; then
	# The default fences: one cuCtxRecordEvent per free, covering every stream.
	tap_program "shim" shim "$SIM_BIN/integrity" -c 1
	tap_program "shim, non-blocking streams only" shim "$SIM_BIN/integrity" -b -c 1
	# The fallback where the driver lacks it: an event on the legacy stream
	# and a query per non-blocking stream.
	PINCACHE_FENCE=runtime
	export PINCACHE_FENCE
	tap_program "shim, PINCACHE_FENCE=runtime" shim "$SIM_BIN/integrity" -c 0
	tap_program "shim, PINCACHE_FENCE=runtime, non-blocking streams only" shim "$SIM_BIN/integrity" -b -c 0
	unset PINCACHE_FENCE
else
	tap_skip "shim: libpincache.so not built"
fi
tap_done
