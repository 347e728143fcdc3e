#!/bin/sh
# nohang: calls that do not wait for the device plainly (a cache miss that
# would release idle blocks to stay within the headroom, pageable copies on
# streams a waiting kernel does not hold) do not wait for it under the shim
# either, with fast blocks and without; the trim a busy device put off is
# made by a later free (the report's trim_deferred and trim_blocks).
# See nohang.c.
. "$top_srcdir/tests/diag/common.sh"

tap_program "plain" plain "$SIM_BIN/nohang"
if have_shim; then
	for fast in on off; do
		PINCACHE_FAST_ALLOC=$fast PINCACHE_REPORT=$SIM_TMP/$fast.json \
			tap_program "shim, fast $fast" shim "$SIM_BIN/nohang"
		if [ ! -x "$DIAG_BIN/jcheck" ]; then
			tap_skip "fast $fast: the report's trims: tests/diag/jcheck needs jansson"
			continue
		fi
		d=$(jget "$SIM_TMP/$fast.json" stats.trim_deferred)
		t=$(jget "$SIM_TMP/$fast.json" stats.trim_blocks)
		if [ -n "$d" ] && [ "$d" -ge 1 ] && [ -n "$t" ] && [ "$t" -ge 1 ]; then
			tap_check 0 "fast $fast: trims put off while the device was busy ($d), made later ($t blocks)"
		else
			tap_check 1 "fast $fast: trims put off ('$d') and made later ('$t' blocks)"
		fi
	done
else
	tap_skip "shim: libpincache.so not built"
fi
tap_done
