#!/bin/sh
# sticky: after a kernel fault (719 as a __trap, 700 as an illegal address)
# the sim answers as the H200 did (sticky.h200.txt, measured), and the shim
# over the sim answers exactly as the sim alone does: a pinned allocation
# the cache could serve gets the sticky error and a NULL pointer, not a
# block (issue 15, D10).
. "$top_srcdir/tests/sim/common.sh"

body() {
	grep -v '^[#+]' "$1"
}

both() {
	run_prog "$1" "$SIM_BIN/sticky" 719 && run_prog "$1" "$SIM_BIN/sticky" 700
}

both plain >"$SIM_TMP/plain" 2>"$SIM_TMP/plain.err"
tap_check $? "plain: sticky ran"
sed 's/^/# stderr: /' "$SIM_TMP/plain.err" | head -n 20
body "$SIM_SRC/sticky.h200.txt" >"$SIM_TMP/h200"
body "$SIM_TMP/plain" | diff -u "$SIM_TMP/h200" - >"$SIM_TMP/diff"
tap_check $? "plain: the sim answers as the H200 did (sticky.h200.txt)"
sed 's/^/# /' "$SIM_TMP/diff"

# Each kind of fence: the context-wide one's own driver call tells a broken
# context; fences made stream by stream ask before their runtime calls.
if have_shim; then
	for fence in context runtime driver; do
		PINCACHE_FENCE=$fence both shim >"$SIM_TMP/shim" 2>"$SIM_TMP/shim.err"
		tap_check $? "shim, $fence fences: sticky ran"
		sed 's/^/# stderr: /' "$SIM_TMP/shim.err" | grep -v 'pincache\[' | head -n 20
		diff -u "$SIM_TMP/plain" "$SIM_TMP/shim" >"$SIM_TMP/diff"
		tap_check $? "shim, $fence fences: every answer equals the sim's alone"
		sed 's/^/# /' "$SIM_TMP/diff"
	done
else
	tap_skip "shim: libpincache.so not built"
fi
tap_done
