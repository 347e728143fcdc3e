#!/bin/sh
# errors: error parity.  The sim answers bad input as a real H200 did
# (errors.h200.txt, measured), and the shim over the sim answers exactly as
# the sim alone does, including the last-error bookkeeping and the questions
# about blocks the shim holds in its cache (freed, freed twice, interiors).
. "$top_srcdir/tests/sim/common.sh"

body() {
	grep -v '^#' "$1"
}

run_prog plain "$SIM_BIN/errors" >"$SIM_TMP/plain" 2>"$SIM_TMP/plain.err"
tap_check $? "plain: errors ran"
body "$SIM_SRC/errors.h200.txt" >"$SIM_TMP/h200"
body "$SIM_TMP/plain" | diff -u "$SIM_TMP/h200" - >"$SIM_TMP/diff"
tap_check $? "plain: the sim answers as the H200 did (errors.h200.txt)"
sed 's/^/# /' "$SIM_TMP/diff"

SIM_DEVICES=2
export SIM_DEVICES
run_prog plain "$SIM_BIN/errors" multi >"$SIM_TMP/plain2" 2>"$SIM_TMP/plain2.err"
tap_check $? "plain, 2 devices: errors ran"
grep -q '^cudaEventRecord(event 0, stream of device 1) *ret=400 peek=400 last=400 last2=0' "$SIM_TMP/plain2"
tap_check $? "plain, 2 devices: recording an event on another device's stream is an invalid handle (400)"
grep -q '^cudaEventRecord(event 0, legacy of device 0) *ret=0 ' "$SIM_TMP/plain2"
tap_check $? "plain, 2 devices: ... and on its own device's legacy stream succeeds"
unset SIM_DEVICES

if have_shim; then
	run_prog shim "$SIM_BIN/errors" >"$SIM_TMP/shim" 2>"$SIM_TMP/shim.err"
	tap_check $? "shim: errors ran"
	diff -u "$SIM_TMP/plain" "$SIM_TMP/shim" >"$SIM_TMP/diff"
	tap_check $? "shim: every answer equals the sim's alone"
	sed 's/^/# /' "$SIM_TMP/diff"
	SIM_DEVICES=2
	export SIM_DEVICES
	run_prog shim "$SIM_BIN/errors" multi >"$SIM_TMP/shim2" 2>"$SIM_TMP/shim2.err"
	diff -u "$SIM_TMP/plain2" "$SIM_TMP/shim2" >"$SIM_TMP/diff"
	tap_check $? "shim, 2 devices: every answer equals the sim's alone"
	sed 's/^/# /' "$SIM_TMP/diff"
else
	tap_skip "shim: libpincache.so not built"
fi
tap_done
