#!/bin/sh
# oom12: tests/sim/oom.c over libcudart.so.12 and the simulated libcuda.so.1
# (SIM_PINNED_LIMIT=8M): a context is current, so under the shim an
# allocation made while an error is pending tries the driver first, and the
# pending error survives the trim and retry (issue 15, D5).
. "$top_srcdir/tests/driver/common.sh"

SIM_PINNED_LIMIT=8M
export SIM_PINNED_LIMIT
tap_program "plain" plain "$DRV_BIN/oom12" plain
if have_shim; then
	tap_program "shim" shim "$DRV_BIN/oom12" shim
else
	tap_skip "shim: libpincache.so not built"
fi
tap_done
