#!/bin/sh
# stage-unsafe: PINCACHE_TEST_STAGE_UNSAFE=1 makes staging reuse ring chunks
# without waiting for their DMA (and copy D2H data out before it landed).
# The checks of stage.sh must then fail; this script passes only if they do,
# which proves they can see broken staging.  Same for the pool's own test
# (tests/unit/xfer_test -u).  Sanitizer reports are off here: the races are the point.
. "$top_srcdir/tests/sim/common.sh"

ST=$top_builddir/tests/stage/stage_test
TSAN_OPTIONS="report_bugs=0 ${TSAN_OPTIONS:-}"
export TSAN_OPTIONS

# bad_points OUTFILE: "not ok" lines a program printed.
bad_points() {
	grep -c '^not ok' "$1"
}

run_prog plain "$top_builddir/tests/unit/xfer_test" -u >"$SIM_TMP/x.out" 2>"$SIM_TMP/x.err"
grep -q '^ok .*unsafe: reusing slots' "$SIM_TMP/x.out"
tap_check $? "pool: reusing slots without waiting corrupts the copy, and xfer_test sees it"

if ! have_shim; then
	tap_skip "shim: libpincache.so not built"
	tap_done
	exit 0
fi
PINCACHE_REPORT=off PINCACHE_TEST_STAGE_UNSAFE=1
PINCACHE_STAGE_RING=192K PINCACHE_STAGE_CHUNK=64K PINCACHE_STAGE_MIN=64K PINCACHE_STAGE_THREADS=3
export PINCACHE_REPORT PINCACHE_TEST_STAGE_UNSAFE PINCACHE_STAGE_RING PINCACHE_STAGE_CHUNK \
	PINCACHE_STAGE_MIN PINCACHE_STAGE_THREADS
for t in overwrite d2h integrity; do
	run_prog shim "$ST" -e any -m 64K -M 16M $t >"$SIM_TMP/$t.out" 2>"$SIM_TMP/$t.err"
	rc=$?
	n=$(bad_points "$SIM_TMP/$t.out")
	grep '^not ok' "$SIM_TMP/$t.out" | head -n 3 | sed 's/^/# /'
	if [ "$rc" -gt 1 ]; then
		tap_check 1 "unsafe $t: stage_test crashed or hung (exit status $rc)"
	else
		[ "$n" -gt 0 ]
		tap_check $? "unsafe $t: $n checks failed, as they must with chunks reused early"
	fi
done
tap_done
