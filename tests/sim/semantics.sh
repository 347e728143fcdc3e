#!/bin/sh
# semantics: copy semantics a program relies on (pinned copies read at
# execution, pageable copies staged or completed before return, default-stream
# ordering, _ptsz/_ptds), kept under the shim; and the driver facts the sim
# models (cudaFreeHost waits and stalls others, cudaHostAlloc does not), which
# the shim removes for frees; a free during a graph capture leaves the capture
# valid.  See semantics.c.
. "$top_srcdir/tests/sim/common.sh"

tap_program "plain" plain "$SIM_BIN/semantics" plain
if have_shim; then
	tap_program "shim" shim "$SIM_BIN/semantics" shim
else
	tap_skip "shim: libpincache.so not built"
fi
tap_done
