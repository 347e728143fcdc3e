#!/bin/sh
# oom: with pinned memory scarce (SIM_PINNED_LIMIT=8M), a request that fits
# only once idle cached blocks are released succeeds (trim and retry), and an
# impossible one fails with cudaErrorMemoryAllocation, as without the shim.
. "$top_srcdir/tests/sim/common.sh"

SIM_PINNED_LIMIT=8M
export SIM_PINNED_LIMIT
tap_program "plain" plain "$SIM_BIN/oom" plain
if have_shim; then
	tap_program "shim" shim "$SIM_BIN/oom" shim
else
	tap_skip "shim: libpincache.so not built"
fi
tap_done
