#!/bin/sh
# stage: pageable cudaMemcpy semantics (stage_test) plain and under the
# shim's staging in several configurations: the default ring, a tiny ring
# that wraps many times in every copy, the calling thread alone, staging off,
# observe mode.  Shimmed runs must show that staging happened: stage_test
# checks the sim's counters per copy (-e staged), and the JSON report's
# stage_* counts are checked here.
. "$top_srcdir/tests/sim/common.sh"

ST=$top_builddir/tests/stage/stage_test
# Largest copies: main runs, the tiny ring, the other configurations.
# Sanitizers slow the test's own fill and check loops down a lot; the ring
# still wraps many times at these sizes.
MAX=256M MID=64M SMALL=16M PLAIN=256M
[ -n "$(san_runtime "$ST")" ] && MAX=8M MID=4M SMALL=2M PLAIN=1M

unset PINCACHE_STAGE PINCACHE_STAGE_MIN PINCACHE_STAGE_RING PINCACHE_STAGE_CHUNK \
	PINCACHE_STAGE_THREADS PINCACHE_TEST_STAGE_UNSAFE PINCACHE_MODE
PINCACHE_REPORT=off
export PINCACHE_REPORT
# Staging's mechanics: copies from freshly mapped sources staged too
# (PINCACHE_STAGE_FRESH_MIN=0; tests/stage/fresh.sh tests the rule).
PINCACHE_STAGE_FRESH_MIN=0
export PINCACHE_STAGE_FRESH_MIN

tap_program "plain" plain "$ST" -e driver -M $PLAIN

if ! have_shim; then
	tap_skip "shim: libpincache.so not built"
	tap_done
	exit 0
fi

# Default configuration; the report must show the staged copies.
PINCACHE_REPORT=$SIM_TMP/default.json
tap_program "shim" shim "$ST" -e staged -m 512K -M $MAX \
	integrity overwrite d2h order threads errors capture reset
check_stat "$SIM_TMP/default.json" stage_h2d_calls -gt 0 "report: host-to-device copies staged"
check_stat "$SIM_TMP/default.json" stage_d2h_calls -gt 0 "report: device-to-host copies staged"
check_stat "$SIM_TMP/default.json" stage_h2d_bytes -ge 8388608 "report: staged bytes counted"
check_stat "$SIM_TMP/default.json" stage_fallbacks -eq 0 "report: no internal fallbacks"
check_stat "$SIM_TMP/default.json" stage_ring_fail -eq 0 "report: the ring was allocated"
check_stat "$SIM_TMP/default.json" stage_small_calls -gt 0 "report: small copies counted"
PINCACHE_REPORT=off
tap_program "shim fork" shim "$ST" -e staged -m 512K fork

# A ring of 64K chunks, 2M: every copy over 2M wraps it many times.  2M is
# the smallest ring in which an async copy reads its first 2 MiB at the
# call, as the runtime does (pincache(7) PAGEABLE COPIES); a smaller one
# hands the rest of such a copy to the runtime (tests/sim/order.sh).
PINCACHE_STAGE_RING=2M PINCACHE_STAGE_CHUNK=64K PINCACHE_STAGE_MIN=64K PINCACHE_STAGE_THREADS=3
export PINCACHE_STAGE_RING PINCACHE_STAGE_CHUNK PINCACHE_STAGE_MIN PINCACHE_STAGE_THREADS
tap_program "tiny ring" shim "$ST" -e staged -m 64K -M $MID integrity overwrite d2h order threads errors
# The calling thread alone.
PINCACHE_STAGE_THREADS=1
tap_program "one thread" shim "$ST" -e staged -m 64K -M $SMALL integrity overwrite d2h order
unset PINCACHE_STAGE_RING PINCACHE_STAGE_CHUNK PINCACHE_STAGE_MIN PINCACHE_STAGE_THREADS

# Copy threads per process without the node's share: min(16, CPUs, 8), or the
# CPUs shared by the processes a launcher says run on this node
# (LOCAL_WORLD_SIZE, torchrun's).  With it (the default), a process staging
# alone has min(16, CPUs) whatever the launcher says (tests/stage/node.sh
# has the rest).
cpus=$(nproc 2>/dev/null || echo 1)
for procs in 1 2; do
	want=$((cpus / procs)); [ "$want" -lt 1 ] && want=1; [ "$want" -gt 16 ] && want=16; [ "$want" -gt 8 ] && want=8
	PINCACHE_NODE_SHARE=off PINCACHE_LOG=info LOCAL_WORLD_SIZE=$procs run_prog shim "$ST" -e staged -m 512K \
		-M 1M order >/dev/null 2>"$SIM_TMP/threads.err"
	got=$(sed -n 's/.*staging with \([0-9]*\) copy threads.*/\1/p' "$SIM_TMP/threads.err" | head -n 1)
	[ "$got" = "$want" ]
	tap_check $? "share off, LOCAL_WORLD_SIZE=$procs on $cpus CPUs: $want copy threads (log says ${got:-nothing})"
done
want=$((cpus > 8 ? 8 : cpus))   # min(16, CPUs), of which one process takes at most 8
PINCACHE_LOG=info LOCAL_WORLD_SIZE=2 run_prog shim "$ST" -e staged -m 512K -M 1M order >/dev/null 2>"$SIM_TMP/threads.err"
got=$(sed -n 's/.*node share: \([0-9]*\) copy threads.*/\1/p' "$SIM_TMP/threads.err" | head -n 1)
[ "$got" = "$want" ]
tap_check $? "node share, alone, LOCAL_WORLD_SIZE=2 on $cpus CPUs: $want copy threads (log says ${got:-nothing})"

# One process takes at most 8 copy threads unless PINCACHE_STAGE_THREADS
# says (PC_SHARE_PROC_CAP, share.c), with the node's share and without;
# 32 CPUs pretended (PINCACHE_TEST_CPUS).
for ns in on off; do
	PINCACHE_TEST_CPUS=32 PINCACHE_NODE_SHARE=$ns PINCACHE_LOG=info run_prog shim "$ST" -e staged -m 512K -M 1M order \
		>/dev/null 2>"$SIM_TMP/threads.err"
	got=$(sed -n 's/.*\(staging with\|node share:\) \([0-9]*\) copy threads.*/\2/p' "$SIM_TMP/threads.err" | head -n 1)
	[ "$got" = 8 ]
	tap_check $? "32 CPUs, node share $ns: one process takes 8 copy threads of the 16 (log says ${got:-nothing})"
done
PINCACHE_TEST_CPUS=32 PINCACHE_STAGE_THREADS=12 PINCACHE_NODE_SHARE=off PINCACHE_LOG=info run_prog shim "$ST" -e staged \
	-m 512K -M 1M order >/dev/null 2>"$SIM_TMP/threads.err"
got=$(sed -n 's/.*staging with \([0-9]*\) copy threads.*/\1/p' "$SIM_TMP/threads.err" | head -n 1)
[ "$got" = 12 ]
tap_check $? "PINCACHE_STAGE_THREADS=12: 12 copy threads, no cap (log says ${got:-nothing})"

# Staging off: every pageable copy goes to the runtime.
PINCACHE_STAGE=off
export PINCACHE_STAGE
tap_program "staging off" shim "$ST" -e driver -M $SMALL integrity order errors
unset PINCACHE_STAGE

# Observe mode: nothing staged, the pageable copies counted and timed.
PINCACHE_MODE=observe PINCACHE_REPORT=$SIM_TMP/observe.json
export PINCACHE_MODE
tap_program "observe" shim "$ST" -e driver -M $SMALL integrity
check_stat "$SIM_TMP/observe.json" stage_h2d_calls -eq 0 "observe report: nothing staged"
check_stat "$SIM_TMP/observe.json" stage_h2d_driver_calls -gt 0 "observe report: pageable H2D counted"
check_stat "$SIM_TMP/observe.json" stage_d2h_driver_ns -gt 0 "observe report: pageable D2H timed"
unset PINCACHE_MODE
tap_done
