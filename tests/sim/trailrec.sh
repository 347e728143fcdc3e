#!/bin/sh
# trailrec: a cudaStreamQuery right after a thread synchronized its own
# non-blocking stream answers 0 while another thread's frees are fenced,
# under every PINCACHE_FENCE: nothing is queued on the program's stream.
# See trailrec.c.
. "$top_srcdir/tests/sim/common.sh"

one() {
	run_prog "$@" 2>"$SIM_TMP/err"
	_rc=$?
	sed 's/^/# /' "$SIM_TMP/err"
	return $_rc
}

one plain "$SIM_BIN/trailrec"
tap_check $? "plain: every query right after a sync answers 0"
if have_shim; then
	for f in context runtime driver; do
		PINCACHE_FENCE=$f one shim "$SIM_BIN/trailrec"
		tap_check $? "shim, PINCACHE_FENCE=$f: every query right after a sync answers 0"
	done
else
	tap_skip "shim: libpincache.so not built"
fi
tap_done
