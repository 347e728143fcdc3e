#!/bin/sh
# callcount.sh - the CUDA calls pincache makes itself for one small pageable
# copy and a sync (callcount.c), counted where they reach the simulated
# runtime: the shimmed run's total minus the plain run's.  Fails when the
# count goes above the budget, so that a change that asks the runtime more
# shows here.  The budgets (4 KiB cudaMemcpy H2D, then cudaStreamSynchronize(0)
# or cudaDeviceSynchronize) were 6 and 8 before the copy's sides were
# classified once and its probe stopped asking again for a pending error,
# 5 and 7 before the syncs stopped asking anything: the 3 left are the
# copy's (its host side's kind, its stream's query, the pending error).
# A synchronizing call alone has no budget at all (issue 19, "no tax on
# synchronizing calls"): idle or waiting for a kernel, it reaches the
# runtime once, as the program's own call, and no driver entry point (the
# stream query and device check it used to make: 2 and 3 calls more).
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

check small 3 "4 KiB cudaMemcpy H2D + cudaStreamSynchronize"
check small-dev 3 "4 KiB cudaMemcpy H2D + cudaDeviceSynchronize"

# sync_check CALL STATE NAME: callcount sync CALL STATE, plainly and under
# the shim (CUPTI off): each counts exactly one call, NAME's.
sync_check() {
	for m in plain shim; do
		SIM_CALLS=1 PINCACHE_CUPTI=off run_prog $m "$BIN" sync "$1" "$2" \
			>"$SIM_TMP/$m.sync" 2>"$SIM_TMP/$m.sync.err"
		echo "rc $?" >>"$SIM_TMP/$m.sync"
	done
	want=$(printf 'calls %s 1\ntotal 1\nrc 0' "$3")
	[ "$(cat "$SIM_TMP/plain.sync")" = "$want" ] && [ "$(cat "$SIM_TMP/shim.sync")" = "$want" ]
	tap_check $? "$3 ($1, $2): one runtime call under pincache, the program's own, and no other"
	echo "# plain:" $(cat "$SIM_TMP/plain.sync" "$SIM_TMP/plain.sync.err")
	echo "# shim: " $(cat "$SIM_TMP/shim.sync" "$SIM_TMP/shim.sync.err")
}

for state in idle busy; do
	sync_check stream $state cudaStreamSynchronize
	sync_check ptsz $state cudaStreamSynchronize_ptsz
	sync_check device $state cudaDeviceSynchronize
done
tap_done
