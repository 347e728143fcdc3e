#!/bin/sh
# nofences: EXPECTED TO FAIL (listed in XFAIL_TESTS).  static.sh's program
# with PINCACHE_TEST_NO_FENCES=1: freed blocks are handed out again at once,
# so kernels must see other iterations' bytes.  An XPASS means static.sh
# cannot see a broken fence.
. "$top_srcdir/tests/driver/common.sh"
tap_nofences "static.sh" "$DRV_BIN/drv_churn"
