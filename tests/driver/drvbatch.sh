#!/bin/sh
# drvbatch: the driver's batched copies through cuGetProcAddress (12080 and
# 13000, legacy and per-thread) and dlsym are pincache's, keep their bytes,
# and are counted once per operand; a cudart 12 batch (failIdx ABI), which
# reaches the driver's wrapper with the guard held, is counted once, and a
# batch the shim splits reports failIdx in the program's numbering (issue
# 17, item 1).
. "$top_srcdir/tests/driver/common.sh"

tap_program "plain drv" plain "$DRV_BIN/drv_batch"
tap_program "plain rt12" plain "$DRV_BIN/rt12_batch"
if ! have_shim; then
	tap_skip "shim: libpincache.so not built"
	tap_done
	exit 0
fi
drv_shim "shim drv" "$SIM_TMP/d.json" "$DRV_BIN/drv_batch"
drv_shim "shim rt12" "$SIM_TMP/r.json" "$DRV_BIN/rt12_batch"
if jcheck_ok && report_ok "$SIM_TMP/d.json" && report_ok "$SIM_TMP/r.json"; then
	j=$SIM_TMP/d.json
	# drv_batch.c: 5 batches of 2 operands of 4096 bytes, 5 3D batches of
	# 1024 bytes, 15 cuMemcpyDtoH read-backs.
	tap_eq "$(jget "$j" apis.cudaMemcpyBatchAsync.calls)" 5 "drv: every 1D batch form in its row, once"
	tap_eq "$(jget "$j" apis.cudaMemcpy3DBatchAsync.calls)" 5 "drv: every 3D batch form in its row, once"
	# 13.0's per-thread forms refuse stream 0 (measured): that 1D batch's
	# two operands and that 3D batch's one are not copies, and drv_batch
	# reads back 12 slots, not 15.
	tap_eq "$(jget "$j" stats.memcpy_calls)" $((8 + 4 + 12)) "drv: every operand counted once as a copy"
	tap_eq "$(jget "$j" stats.memcpy_bytes)" $((8 * 4096 + 4 * 1024 + 8 * 4096 + 4 * 1024)) "drv: ... with its bytes"
	j=$SIM_TMP/r.json
	tap_eq "$(jget "$j" apis.cudaMemcpyBatchAsync.calls)" 3 "rt12: each runtime batch counted once, not again in the driver"
else
	tap_skip "report checks need tests/diag/jcheck (jansson)"
fi
tap_done
