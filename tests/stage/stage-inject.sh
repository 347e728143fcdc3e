#!/bin/sh
# stage-inject: a staging event that fails, as one lost to cudaDeviceReset
# does, must not change what the program sees.  libinject.so, preloaded
# behind the shim, makes the 3rd cudaEventRecord, cudaEventQuery or
# cudaEventSynchronize that pincache calls fail; the shim must hand the rest
# of that copy to the runtime (stage_fallbacks in the report), every data
# check must pass, and no error may be left as the program's last error.
# A D2H asks about a slot only when it finds one busy from an earlier copy
# (it waits for its own pieces), so d2h fails the 1st query: its first D2H
# finds the slots of the H2D before it.
. "$top_srcdir/tests/sim/common.sh"

ST=$top_builddir/tests/stage/stage_test
INJ=$top_builddir/tests/stage/.libs/libinject.so
if ! have_shim || [ ! -f "$INJ" ]; then
	tap_skip "libpincache.so or libinject.so not built"
	tap_done
	exit 0
fi
PINCACHE_LIB="$PINCACHE_LIB $INJ"
PINCACHE_STAGE_RING=2M PINCACHE_STAGE_CHUNK=64K PINCACHE_STAGE_MIN=64K PINCACHE_STAGE_THREADS=3
export PINCACHE_LIB PINCACHE_STAGE_RING PINCACHE_STAGE_CHUNK PINCACHE_STAGE_MIN PINCACHE_STAGE_THREADS
# Staging's mechanics: copies from freshly mapped sources staged too
# (PINCACHE_STAGE_FRESH_MIN=0; tests/stage/fresh.sh tests the rule).
PINCACHE_STAGE_FRESH_MIN=0
export PINCACHE_STAGE_FRESH_MIN
for fn in record query sync; do
	for t in overwrite d2h; do
		at=3
		[ $fn-$t = query-d2h ] && at=1
		INJECT_FN=$fn INJECT_AT=$at PINCACHE_REPORT=$SIM_TMP/$fn-$t.json
		export INJECT_FN INJECT_AT PINCACHE_REPORT
		tap_program "$fn fails in $t" shim "$ST" -e any -M 16M $t
		v=$(sed -n 's/.*"stage_fallbacks": *\([0-9][0-9]*\).*/\1/p' "$PINCACHE_REPORT" | head -n 1)
		[ -n "$v" ] && [ "$v" -ge 1 ]
		tap_check $? "$fn fails in $t: the runtime finished the copy (stage_fallbacks = ${v:-missing})"
	done
done
tap_done
