#!/bin/sh
# callcount.sh - the CUDA calls pincache makes itself for one small pageable
# copy and a sync (callcount.c), counted where they reach the simulated
# runtime: the shimmed run's total minus the plain run's.  Fails when the
# count goes above the budget, so that a change that asks the runtime more
# shows here.  The budgets (4 KiB cudaMemcpy H2D, then cudaStreamSynchronize(0)
# or cudaDeviceSynchronize) were 6 and 8 before the copy's sides were
# classified once and its probe stopped asking again for a pending error.
. "$top_srcdir/tests/sim/common.sh"
BIN=$top_builddir/tests/diag/callcount

if ! have_shim; then
	echo "1..0 # SKIP libpincache.so not built"
	exit 0
fi

# count MODE ARG: the program's total (its breakdown kept in $SIM_TMP).
count() {
	SIM_CALLS=1 run_prog "$1" "$BIN" "$2" >"$SIM_TMP/$1.$2" 2>"$SIM_TMP/$1.$2.err" || return 1
	awk '$1 == "total" { print $2 }' "$SIM_TMP/$1.$2"
}

check() {   # check ARG BUDGET TEXT
	plain=$(count plain "$1") && shim=$(count shim "$1")
	if [ -z "$plain" ] || [ -z "$shim" ]; then
		tap_check 1 "$3: the program ran"
		sed 's/^/# /' "$SIM_TMP"/*."$1".err
		return
	fi
	extra=$((shim - plain))
	if [ "$extra" -le "$2" ]; then
		tap_check 0 "$3: pincache's own calls $extra <= $2"
	else
		tap_check 1 "$3: pincache's own calls $extra > $2"
	fi
	echo "# plain:" $(awk '$1 == "calls" { print $2 "=" $3 }' "$SIM_TMP/plain.$1")
	echo "# shim: " $(awk '$1 == "calls" { print $2 "=" $3 }' "$SIM_TMP/shim.$1")
}

check small 5 "4 KiB cudaMemcpy H2D + cudaStreamSynchronize"
check small-dev 7 "4 KiB cudaMemcpy H2D + cudaDeviceSynchronize"
tap_done
