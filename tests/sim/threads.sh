#!/bin/sh
# threads: the integrity workload on 8 threads at once; odd threads use their
# per-thread default stream (cudaMemcpyAsync_ptsz, cudaStreamPerThread).
. "$top_srcdir/tests/sim/common.sh"

SIM_EXPECT_RACES=1
tap_program "self-check" plain "$SIM_BIN/integrity" -t 8 -n 30 -p -u
SIM_EXPECT_RACES=0
tap_program "plain" plain "$SIM_BIN/integrity" -t 8 -n 40 -p
if have_shim; then
	tap_program "shim" shim "$SIM_BIN/integrity" -t 8 -n 40 -p
else
	tap_skip "shim: libpincache.so not built"
fi
tap_done
