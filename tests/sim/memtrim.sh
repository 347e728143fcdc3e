#!/bin/sh
# memtrim: idle cached blocks near a memory limit.  A fake cgroup tree
# (PINCACHE_TEST_LIMITS_ROOT, as in limits.sh) whose pod has a 1 GiB
# memory.max: with no limit, or 900 MiB of it free, the shim keeps four
# freed 32 MiB blocks; with 124 MiB free it keeps none of them (it may keep
# only what leaves the program the larger of 256 MiB and half of what it
# would have plainly); and when the program's own memory grows (the test
# program rewrites memory.current) the next free lets them all go.  With
# fast blocks and without.  See memtrim.c.
. "$top_srcdir/tests/diag/common.sh"

F=$SIM_TMP/root
V2=$F/sys/fs/cgroup
mkdir -p "$F/proc/self" "$V2/pod" || exit 99
printf '0::/pod\n' >"$F/proc/self/cgroup"
echo 1073741824 >"$V2/pod/memory.max"
printf 'anon 0\nfile 0\nshmem 0\n' >"$V2/pod/memory.stat"
# charge MIB: the pod's memory.current
charge() { echo $(($1 << 20)) >"$V2/pod/memory.current"; }

tap_program "plain" plain "$SIM_BIN/memtrim" 32
if ! have_shim; then
	tap_skip "shim: libpincache.so not built"
	tap_done
	exit 0
fi
for fast in on off; do
	export PINCACHE_FAST_ALLOC=$fast
	PINCACHE_TEST_LIMITS_ROOT=$SIM_TMP/nothing tap_program "shim, fast $fast, no limit" shim "$SIM_BIN/memtrim" 160
	charge 124
	PINCACHE_TEST_LIMITS_ROOT=$F tap_program "shim, fast $fast, 900 MiB left" shim "$SIM_BIN/memtrim" 160
	charge 900
	PINCACHE_TEST_LIMITS_ROOT=$F PINCACHE_REPORT=$SIM_TMP/near.json \
		tap_program "shim, fast $fast, 124 MiB left" shim "$SIM_BIN/memtrim" 32
	if [ -x "$DIAG_BIN/jcheck" ]; then
		tap_eq "$(jget "$SIM_TMP/near.json" stats.trim_mem_blocks)" 5 "fast $fast, 124 MiB left: every free released its block (trim_mem_blocks)"
	else
		tap_skip "fast $fast: the report's counts: tests/diag/jcheck needs jansson"
	fi
	charge 124
	MEMTRIM_FILE=$V2/pod/memory.current MEMTRIM_BYTES=$((950 << 20)) PINCACHE_TEST_LIMITS_ROOT=$F \
		tap_program "shim, fast $fast, the program's memory grows" shim "$SIM_BIN/memtrim" 160
done
tap_done
