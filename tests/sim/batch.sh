#!/bin/sh
# batch: batched copies on the simulated runtime (issue 17, item 1).  Each
# runtime entry point counted once per operand, in rows of its own; the
# pageable operands staged under DuringApiCall and Any (and into pageable
# memory), not under Stream, every byte right; a batch of a pinned block
# freed while queued on a stream the shim did not see created never reads
# the block's next owner's bytes (stream-by-stream fences: the batch shows
# the shim the stream); bad arguments and a pending error answered exactly
# as without the shim.
. "$top_srcdir/tests/diag/common.sh"
# Staging's mechanics: copies from freshly mapped sources staged too
# (PINCACHE_STAGE_FRESH_MIN=0; tests/stage/fresh.sh tests the rule).
PINCACHE_STAGE_FRESH_MIN=0
export PINCACHE_STAGE_FRESH_MIN
jcheck_ok() { [ -x "$DIAG_BIN/jcheck" ]; }
report_ok() { [ -s "$1" ] || { tap_check 1 "report $(basename "$1") written"; return 1; }; }

for m in c s r; do
	tap_program "plain -$m" plain "$SIM_BIN/batch" -$m
done
if ! have_shim; then
	tap_skip "shim: libpincache.so not built"
	tap_done
	exit 0
fi
PINCACHE_LIB_EXPECTED=1 PINCACHE_REPORT=$SIM_TMP/c.json tap_program "shim -c" shim "$SIM_BIN/batch" -c
PINCACHE_LIB_EXPECTED=1 PINCACHE_STAGE_MIN=64K PINCACHE_REPORT=$SIM_TMP/s.json tap_program "shim -s" shim "$SIM_BIN/batch" -s
PINCACHE_FENCE=runtime PINCACHE_REPORT=off tap_program "shim -r (runtime fences)" shim "$SIM_BIN/batch" -r
if jcheck_ok && report_ok "$SIM_TMP/c.json" && report_ok "$SIM_TMP/s.json"; then
	j=$SIM_TMP/c.json
	# batch.c -c: one cudaMemcpy set-up copy and six read-backs, batches of
	# 3 and 2 operands of 4096 bytes, 3D batches of 2 and 1 of 1024 bytes;
	# and a refused batch of each kind (the _ptsz form's stream 0), whose
	# operands are no copies.
	tap_eq "$(jget "$j" apis.cudaMemcpyBatchAsync.calls)" 3 "-c: both 1D batch entry points in their row"
	tap_eq "$(jget "$j" apis.cudaMemcpyBatchAsync.bytes)" $((5 * 4096)) "-c: ... with their operands' bytes"
	tap_eq "$(jget "$j" apis.cudaMemcpy3DBatchAsync.calls)" 3 "-c: both 3D batch entry points in theirs"
	tap_eq "$(jget "$j" apis.cudaMemcpy3DBatchAsync.bytes)" $((3 * 1024)) "-c: ... with their operands' bytes"
	tap_eq "$(jget "$j" stats.memcpy_calls)" $((1 + 6 + 5 + 3)) "-c: every operand counted once as a copy"
	tap_eq "$(jget "$j" copies.h2d_pinned.calls)" 2 "-c: the pinned H2D operands in the copies table"
	tap_eq "$(jget "$j" copies.d2h_pinned.calls)" 1 "-c: the pinned D2H operand"
	j=$SIM_TMP/s.json
	# batch.c -s: besides the batch, one pageable set-up cudaMemcpy H2D and
	# four read-backs D2H, each of 1 MiB, staged.
	tap_eq "$(jget "$j" stats.stage_h2d_calls)" $((1 + 2)) "-s: the DuringApiCall and Any pageable H2D operands staged"
	tap_eq "$(($(jget "$j" stats.stage_h2d_calls) + $(jget "$j" stats.stage_h2d_driver_calls)))" $((1 + 2)) \
		"-s: the Stream-order pageable operand left in the batch (not staged, nor made a single copy)"
	tap_eq "$(jget "$j" stats.stage_d2h_calls)" $((4 + 1)) "-s: the pageable D2H operand staged"
	tap_eq "$(jget "$j" copies.h2d_pageable.calls)" $((1 + 3)) "-s: the three pageable H2D operands in the copies table (one left to the batch)"
	tap_eq "$(jget "$j" apis.cudaMemcpyBatchAsync.calls)" 2 "-s: two batch calls"
	tap_eq "$(jget "$j" copies.d2h_pageable.calls)" $((4 + 1 + 1)) "-s: the Stream-order D2H operand in the copies table, not staged"
else
	tap_skip "report checks need tests/diag/jcheck (jansson)"
fi
run_prog plain "$SIM_BIN/batch" -e >"$SIM_TMP/e.plain" 2>&1
PINCACHE_STAGE_MIN=64K PINCACHE_REPORT=off run_prog shim "$SIM_BIN/batch" -e >"$SIM_TMP/e.shim" 2>&1
sed 's/^/# plain: /' "$SIM_TMP/e.plain"
test -s "$SIM_TMP/e.plain" && cmp -s "$SIM_TMP/e.plain" "$SIM_TMP/e.shim"
tap_check $? "-e: bad arguments and a pending error: codes, last errors and device bytes as without the shim"
diff "$SIM_TMP/e.plain" "$SIM_TMP/e.shim" | sed 's/^/# /'
tap_done
