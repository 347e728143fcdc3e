#!/bin/sh
# fasthelp: a fast block of 8 MiB or more is pre-faulted by the copy threads
# (at most 8 per process) and by helper threads beyond them, up to the
# process's share of the node (16 with 32 CPUs pretended); none where the
# block is smaller than PINCACHE_TEST_FAST_WIDE_MIN, where
# PINCACHE_STAGE_THREADS fixes the share, or on a 2-CPU share; the block
# holds its bytes every time.
. "$top_srcdir/tests/diag/common.sh"

# run NAME ENV...: fasthelp under the shim with ENV; its line in $SIM_TMP/NAME
run() {
	_n=$1
	shift
	(
		export "$@" PINCACHE_FAST_ALLOC=on PINCACHE_REPORT="$SIM_TMP/$_n.json"
		run_prog shim "$SIM_BIN/fasthelp" >"$SIM_TMP/$_n" 2>"$SIM_TMP/$_n.err"
	)
	echo "# $_n: $(cat "$SIM_TMP/$_n")"
}
field() { sed -n "s/.*$2=\([^ ]*\).*/\1/p" "$SIM_TMP/$1"; }

run_prog plain "$SIM_BIN/fasthelp" >"$SIM_TMP/plain" 2>&1
tap_eq "$(cat "$SIM_TMP/plain")" "alloc=0 helpers=0 bytes=ok" "plain: the block, no helper"
if ! have_shim; then
	tap_skip "shim: libpincache.so not built"
	tap_done
	exit 0
fi
run wide PINCACHE_TEST_CPUS=32
h=$(field wide helpers)
[ "$(field wide alloc)" = 0 ] && [ "$(field wide bytes)" = ok ] && [ -n "$h" ] && [ "$h" -ge 1 ] && [ "$h" -le 8 ]
tap_check $? "32 CPUs: a 16 MiB fast block pre-faulted with 1 to 8 helpers ($h), its bytes right"
check_stat "$SIM_TMP/wide.json" fast_alloc_calls = 1 "... a fast block"
run narrow PINCACHE_TEST_CPUS=32 PINCACHE_TEST_FAST_WIDE_MIN=32M
tap_eq "$(field narrow helpers) $(field narrow bytes)" "0 ok" "32 CPUs, helpers from 32 MiB: none for 16 MiB"
run fixed PINCACHE_TEST_CPUS=32 PINCACHE_STAGE_THREADS=8
tap_eq "$(field fixed helpers) $(field fixed bytes)" "0 ok" "PINCACHE_STAGE_THREADS=8: the share is the pool, no helper"
run small PINCACHE_TEST_CPUS=2
tap_eq "$(field small helpers) $(field small bytes)" "0 ok" "2 CPUs: no helper"
tap_done
