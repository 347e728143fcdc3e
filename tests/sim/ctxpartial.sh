#!/bin/sh
# ctxpartial: EXPECTED TO FAIL (listed in XFAIL_TESTS).  SIM_TEST_CTX_PARTIAL=1
# makes the simulated device's cuCtxRecordEvent leave non-blocking streams
# out, so pincache's default context-wide fences no longer cover the copies
# and zero-copy kernels queued there; integrity must then see other
# iterations' bytes.  This proves that the integrity test can tell a
# context-wide fence from one that covers only the legacy and blocking
# streams (-b: every copy and kernel on the non-blocking streams).  An "ok"
# here (XPASS) means it cannot.
. "$top_srcdir/tests/sim/common.sh"
tap_broken "the integrity test" SIM_TEST_CTX_PARTIAL=1 "$SIM_BIN/integrity" -b
