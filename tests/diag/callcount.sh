#!/bin/sh
# callcount.sh - the CUDA calls pincache makes itself for one small pageable
# copy and a sync (callcount.c), counted where they reach the simulated
# runtime: the shimmed run's total minus the plain run's.  Fails when the
# count goes above the budget, so that a change that asks the runtime more
# shows here.  The budgets (4 KiB cudaMemcpy H2D, then cudaStreamSynchronize(0)
# or cudaDeviceSynchronize) were 6 and 8 before the copy's sides were
# classified once and its probe stopped asking again for a pending error,
# 5 and 7 before the syncs stopped asking anything, 3 and 3 before a small
# copy's host side was told without the runtime where pincache knows it
# and its stream was asked through the driver (issue 19), 1 and 1 before a
# copy of less than 1 MiB that waits for its stream was judged by its
# duration (as the synchronizing calls) instead of a stream query.
# A synchronizing call alone has no budget at all (issue 19, "no tax on
# synchronizing calls"): idle or waiting for a kernel, it reaches the
# runtime once, as the program's own call, and no driver entry point (the
# stream query and device check it used to make: 2 and 3 calls more).
# A small copy alone (issue 19, "never slower than the driver, at any
# size"; below PINCACHE_STAGE_MIN, CUPTI off), after a first copy of the
# same buffer: none, whether it can wait for its stream (cudaMemcpy, a
# pageable D2H: judged by its duration below 1 MiB) or not (a pageable
# async H2D, read at the call; an async one from or into pinned memory);
# one stream query for a copy of 1 MiB that can wait (PINCACHE_STAGE_MIN
# set above it here, so that it is not staged); its host side never asked
# about, pinned (a cache block, a registered range) or pageable (told at
# the first copy).  Before: 2 to 3 each (cudaPeekAtLastError,
# cudaPointerGetAttributes but for a cache block, cudaStreamQuery but for a
# pinned async copy), then 1 for those that can wait (the stream query).
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

check small 0 "4 KiB cudaMemcpy H2D + cudaStreamSynchronize"
check small-dev 0 "4 KiB cudaMemcpy H2D + cudaDeviceSynchronize"

# copy_check BUDGET API DIR MEM [SIZE]: callcount copy API DIR MEM SIZE,
# plainly and under the shim (CUPTI off): the shim's copy makes at most
# BUDGET calls more than the plain one, which makes exactly one, its own.
copy_check() {
	budget=$1
	shift
	for m in plain shim; do
		SIM_CALLS=1 PINCACHE_CUPTI=off PINCACHE_STAGE_MIN=2M run_prog $m "$BIN" copy "$@" \
			>"$SIM_TMP/$m.copy" 2>"$SIM_TMP/$m.copy.err"
		echo "rc $?" >>"$SIM_TMP/$m.copy"
	done
	plain=$(awk '$1 == "total" { print $2 }' "$SIM_TMP/plain.copy")
	shim=$(awk '$1 == "total" { print $2 }' "$SIM_TMP/shim.copy")
	if [ "$plain" = 1 ] && [ -n "$shim" ] && grep -q '^rc 0$' "$SIM_TMP/plain.copy" &&
		grep -q '^rc 0$' "$SIM_TMP/shim.copy" && [ $((shim - plain)) -le "$budget" ]; then
		tap_check 0 "copy $*: pincache's own calls $((shim - plain)) <= $budget"
	else
		tap_check 1 "copy $*: pincache's own calls $((${shim:-999} - ${plain:-0})) > $budget, or a run failed (plain: ${plain:-?} calls)"
	fi
	echo "# plain:" $(awk '$1 == "calls" { print $2 "=" $3 }' "$SIM_TMP/plain.copy") $(cat "$SIM_TMP/plain.copy.err")
	echo "# shim: " $(awk '$1 == "calls" { print $2 "=" $3 }' "$SIM_TMP/shim.copy") $(grep -v '^pincache' "$SIM_TMP/shim.copy.err")
}

copy_check 0 async h2d pageable 4096
copy_check 0 async h2d pageable 65536
copy_check 0 async d2h pageable 4096
copy_check 0 memcpy h2d pageable 4096
copy_check 0 memcpy d2h pageable 65536
copy_check 1 memcpy d2h pageable 1048576
copy_check 0 async h2d pinned 4096
copy_check 0 async d2h pinned 65536
copy_check 0 memcpy h2d pinned 4096
copy_check 0 async h2d registered 4096
copy_check 0 async d2h registered 65536

# A registration with an error pending, PINCACHE_MODE=off: exactly the
# plain run's calls (pincache asks nothing in off mode, nor in a fork child).
for m in plain shim; do
	SIM_CALLS=1 PINCACHE_MODE=off run_prog $m "$BIN" register >"$SIM_TMP/$m.reg" 2>"$SIM_TMP/$m.reg.err"
	echo "rc $?" >>"$SIM_TMP/$m.reg"
done
plain=$(awk '$1 == "total" { print $2 }' "$SIM_TMP/plain.reg")
shim=$(awk '$1 == "total" { print $2 }' "$SIM_TMP/shim.reg")
if [ -n "$plain" ] && [ "$plain" = "$shim" ] && grep -q '^rc 0$' "$SIM_TMP/plain.reg" && grep -q '^rc 0$' "$SIM_TMP/shim.reg"; then
	tap_check 0 "cudaHostRegister in off mode, an error pending: the plain run's $plain calls"
else
	tap_check 1 "cudaHostRegister in off mode, an error pending: ${shim:-?} calls against ${plain:-?}, or a run failed"
fi
echo "# plain:" $(awk '$1 == "calls" { print $2 "=" $3 }' "$SIM_TMP/plain.reg") $(cat "$SIM_TMP/plain.reg.err")
echo "# shim: " $(awk '$1 == "calls" { print $2 "=" $3 }' "$SIM_TMP/shim.reg") $(grep -v '^pincache' "$SIM_TMP/shim.reg.err")

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
