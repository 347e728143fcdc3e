#!/bin/sh
# fresh: a pageable H2D copy below PINCACHE_STAGE_FRESH_MIN from a source
# just mapped and filled goes to the runtime (staged, it was slower there on
# the H200), one from a buffer the thread copied before is staged; with
# PINCACHE_STAGE_FRESH_MIN=0 both are staged, and at or above it (4 MiB)
# both are.  The bytes are right in every case, and the report counts the
# copies it left to the runtime (stage_fresh_calls; none in observe mode,
# which stages nothing).  See fresh.c.
. "$top_srcdir/tests/sim/common.sh"

FR=$top_builddir/tests/stage/fresh
unset PINCACHE_STAGE PINCACHE_STAGE_MIN PINCACHE_STAGE_FRESH_MIN PINCACHE_MODE SIM_PAGEABLE_ACCESS

tap_program "plain" plain "$FR" -e plain
if ! have_shim; then
	tap_skip "shim: libpincache.so not built"
	tap_done
	exit 0
fi
PINCACHE_REPORT=$SIM_TMP/fresh.json tap_program "shim, default" shim "$FR" -e fresh
v=$(report_stat stage_fresh_calls "$SIM_TMP/fresh.json")
[ -n "$v" ] && [ "$v" -ge 3 ] && [ "$v" -le 4 ]
tap_check $? "the report counts the fresh copies left to the runtime (3, or 4 with the warm-up): ${v:-missing}"
PINCACHE_STAGE_FRESH_MIN=0 PINCACHE_REPORT=$SIM_TMP/off.json tap_program "shim, PINCACHE_STAGE_FRESH_MIN=0" \
	shim "$FR" -e all
v=$(report_stat stage_fresh_calls "$SIM_TMP/off.json")
[ "$v" = 0 ]
tap_check $? "PINCACHE_STAGE_FRESH_MIN=0: no copy counted as fresh (${v:-missing})"
PINCACHE_MODE=observe PINCACHE_REPORT=$SIM_TMP/observe.json tap_program "shim, observe mode" shim "$FR" -e plain
v=$(report_stat stage_fresh_calls "$SIM_TMP/observe.json")
[ "$v" = 0 ]
tap_check $? "observe mode, which stages nothing: no copy counted as fresh (${v:-missing})"
PINCACHE_REPORT=off tap_program "shim, 4 MiB copies (the threshold)" shim "$FR" -e all -n 4194304
PINCACHE_STAGE_FRESH_MIN=8M PINCACHE_REPORT=off tap_program "shim, 4 MiB copies below PINCACHE_STAGE_FRESH_MIN=8M" \
	shim "$FR" -e fresh -n 4194304
tap_done
