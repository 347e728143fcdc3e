#!/bin/sh
# ownmem: pincache's own pinned memory (the staging ring's chunks, the fast
# blocks' witness) is nothing a program can see or free.  ownmem.c walks
# every page of the process's writable mappings but its own pinned block
# and asks each what a dangling pointer there would get: no host memory,
# not pinned, not registered, not freed (a block it freed to the cache
# included); then its staged copies must carry their bytes and
# its block's free inside a global capture must still be refused (900).
# Plainly, and under the shim with fast blocks for everything (the witness,
# fast ring chunks) and with none (the ring's chunks from cudaHostAlloc).
# The shim runs must have made a ring and, with fast blocks, a witness (a
# fast block), or the walk proves nothing.  The runtime's and the driver's
# forms are asked (the driver's through the runtime's entry points).  Seen
# failing before the rings' chunks and the witnesses were recorded as
# pincache's own (fuzzer seed 12496): with fast blocks 6 pages (five ring
# chunks and the witness) answered as pinned to both forms of each query and
# were freed, and the capture's free answered 1 (the freed witness's
# answer); without them 5.  Seen failing before unregisters of such
# pointers answered as for memory nobody registered: 10,272-10,274 pages
# (ring chunks, the idle block) answered 1 instead of 713.
. "$top_srcdir/tests/diag/common.sh"

tap_program "plain" plain "$SIM_BIN/ownmem"
if ! have_shim; then
	tap_skip "shim: libpincache.so not built"
	tap_done
	exit 0
fi
for fast in on off; do
	PINCACHE_FAST_ALLOC=$fast PINCACHE_FAST_ALLOC_MIN=0 PINCACHE_REPORT=$SIM_TMP/r-$fast.json \
		tap_program "shim, fast blocks $fast" shim "$SIM_BIN/ownmem"
	if [ -x "$DIAG_BIN/jcheck" ]; then
		ring=$(jget "$SIM_TMP/r-$fast.json" stats.stage_ring_bytes_peak)
		[ "${ring:-0}" -gt 0 ]
		tap_check $? "fast $fast: the copies were staged through a ring (stage_ring_bytes_peak=$ring)"
		f=$(jget "$SIM_TMP/r-$fast.json" stats.fast_alloc_calls)
		if [ "$fast" = on ]; then [ "${f:-0}" -gt 0 ]; else [ "${f:-0}" -eq 0 ]; fi
		tap_check $? "fast $fast: fast blocks made: $f"
	else
		tap_skip "fast $fast: the report's counts: tests/diag/jcheck needs jansson"
	fi
done
tap_done
