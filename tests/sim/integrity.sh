#!/bin/sh
# integrity: a freed pinned block is handed out again only after the GPU work
# queued before the free (copies, kernels, zero-copy reads) has run.  One
# thread, several blocking and non-blocking streams; see integrity.c.
. "$top_srcdir/tests/sim/common.sh"

SIM_EXPECT_RACES=1
tap_program "self-check" plain "$SIM_BIN/integrity" -u
SIM_EXPECT_RACES=0
tap_program "plain" plain "$SIM_BIN/integrity"
if have_shim; then
	tap_program "shim" shim "$SIM_BIN/integrity"
else
	tap_skip "shim: libpincache.so not built"
fi
tap_done
