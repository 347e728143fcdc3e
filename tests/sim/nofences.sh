#!/bin/sh
# nofences: EXPECTED TO FAIL (listed in XFAIL_TESTS).  PINCACHE_TEST_NO_FENCES=1
# makes the library hand freed blocks out again at once, ignoring the GPU work
# still queued on them; integrity must then see other iterations' bytes.  This
# proves that integrity.sh and threads.sh can fail.  An "ok" here (XPASS) means
# the test cannot see a broken fence; a crash is reported as an error.
. "$top_srcdir/tests/sim/common.sh"
tap_nofences "the integrity test" "$SIM_BIN/integrity" -t 2 -p
