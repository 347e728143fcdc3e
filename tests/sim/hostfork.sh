#!/bin/sh
# hostfork: a fork() child sees a cudaHostAlloc block as on the H200 (the
# parent's bytes, and its writes made after the fork), plainly and under the
# shim; and, plainly, what the fork costs: registered private memory copied
# and paid for by size, nothing more for shared, MADV_DONTFORK or
# cudaHostAlloc memory.  H200-sized alloc costs make the copy's cost
# 0.385 ms per MiB (sim_fork.c).  See hostfork.c.
. "$top_srcdir/tests/sim/common.sh"

tap_program "plain" plain "$SIM_BIN/hostfork"
if have_shim; then
	tap_program "shim" shim "$SIM_BIN/hostfork"
else
	tap_skip "shim: libpincache.so not built"
fi
SIM_ALLOC_US_PER_MB=430 HOSTFORK_MIN_MS=6
export SIM_ALLOC_US_PER_MB HOSTFORK_MIN_MS
tap_program "plain -c" plain "$SIM_BIN/hostfork" -c
unset SIM_ALLOC_US_PER_MB HOSTFORK_MIN_MS
tap_done
