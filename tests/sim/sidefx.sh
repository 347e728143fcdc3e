#!/bin/sh
# sidefx: what pincache does to the process besides CUDA is invisible to
# the program (tests/sim/sidefx.c says what each mode checks; its exit
# status names the check that failed).
#  - stdfds: a program run with its stdin (or all three standard
#    descriptors) closed finds them still closed after its CUDA work, and
#    its own next open() gets the lowest of them: the node's shared file
#    and the fast blocks' memfds never take 0, 1 or 2 (util/fdsafe.h).
#  - errno: 0 when main starts; a successful call leaves it as the program
#    set it (intercept/guard.h), though pincache's own system calls failed
#    on the way (the node's file not there yet).
#  - nofile: with no descriptor free (RLIMIT_NOFILE), a fast block falls
#    back to the real call, the node share to none, and the calls succeed
#    with errno untouched and no descriptor left behind.
#  - stack: the calls, and the exit report, on a thread with the least
#    stack pthreads allows (16 KiB): pincache's large buffers (paths, the
#    report's emitter, the node file's header, mincore's vector) are not on
#    the program's stack (it crashed with SIGSEGV before).
#  - segv: a program that tracks writes with mprotect and a SIGSEGV handler
#    gets its handler called for the faults of pincache's copy threads too
#    (they leave the fault signals unblocked: stage_threads.c); blocked,
#    the kernel killed the process.
#  - exit: main calls exit() while threads are stuck inside calls behind a
#    host function that never returns (a staged copy holding the staging
#    lock, a stream synchronization) and others allocate, free and stage:
#    the process ends at once, with status 0, and the report is written.
#    Seen failing (a hang, killed by the timeout) with the staging lock
#    taken at exit.
#  - fork: fork() children made while another thread makes fast blocks get
#    none of their memfds (fastmem.c closes them in the child).
. "$top_srcdir/tests/sim/common.sh"
P=$SIM_BIN/sidefx

# st MODE plain|shim ARGS... [-- REDIRECTIONS are the caller's]: exit status
st() {
	_m=$1
	shift
	run_prog "$_m" "$P" "$@"
}
# point STATUS TEXT: ok when STATUS is 0, the status shown
point() {
	tap_check "$1" "$2 (exit status $1)"
}

st plain stdfds <&-
point $? "plain, stdin closed: the descriptors stay as they were"
(st plain stdfds <&- >&- 2>&-)
point $? "plain, stdin, stdout and stderr closed: the descriptors stay as they were"
st plain errno
point $? "plain: successful calls leave errno alone"
st plain nofile
point $? "plain, no descriptor free: the calls succeed, errno untouched, no descriptor left"
# Sanitizers' frames are larger, and their runtimes want more stack: a
# stack they can work with, there.
SMALL=
SMALL_TEXT="16 KiB"
if [ -n "$(san_runtime "$P")" ]; then
	SMALL=1048576
	SMALL_TEXT="1 MiB (sanitizer)"
fi
st plain stack $SMALL
point $? "plain, a $SMALL_TEXT stack: the calls and exit()"
st plain segv
point $? "plain: a SIGSEGV handler opens the pages a pageable copy touches"
SIM_TIMEOUT=60 st plain exit
point $? "plain: exit() while other threads are inside calls"
st plain fork
point $? "plain: no fork child has a memfd"
if ! have_shim; then
	tap_skip "libpincache.so not built"
	tap_done
	exit 0
fi

PINCACHE_LOG=info st shim stdfds <&-
point $? "stdin closed: no descriptor of pincache's takes 0, and the program's open() gets 0"
(PINCACHE_LOG=info PINCACHE_REPORT="$SIM_TMP/fds.json" st shim stdfds <&- >&- 2>&-)
point $? "stdin, stdout and stderr closed: none of pincache's descriptors takes one of them"
check_stat "$SIM_TMP/fds.json" stage_h2d_calls -ge 1 "all closed: the copies were staged"
check_stat "$SIM_TMP/fds.json" node_ranks_peak -eq 1 "all closed: the node's shared file was made"
check_stat "$SIM_TMP/fds.json" fast_alloc_calls -ge 1 "all closed: the 64 MiB block was a fast one"

PINCACHE_REPORT="$SIM_TMP/errno.json" st shim errno
point $? "successful calls (a miss, a hit, a fast block, staged copies) leave errno alone"
check_stat "$SIM_TMP/errno.json" node_ranks_peak -eq 1 "errno: the node's shared file was made on the way"
PINCACHE_REPORT="$SIM_TMP/nofile.json" st shim nofile
point $? "no descriptor free: the calls succeed, errno untouched, no descriptor left"
check_stat "$SIM_TMP/nofile.json" fast_alloc_fallbacks -ge 1 "no descriptor free: the fast block fell back to the real call"
check_stat "$SIM_TMP/nofile.json" node_unavailable -eq 1 "no descriptor free: no node share"

PINCACHE_LOG=debug st shim stack $SMALL
point $? "a $SMALL_TEXT stack: the calls, and the exit report on stderr"
PINCACHE_REPORT="$SIM_TMP/stack.json" PINCACHE_TRACE="$SIM_TMP/stack-trace.json" st shim stack $SMALL
point $? "a $SMALL_TEXT stack: the calls, and the JSON report and the trace written to files"
check_stat "$SIM_TMP/stack.json" fast_alloc_calls -ge 1 "small stack: the report was written (a fast block counted)"
[ -s "$SIM_TMP/stack-trace.json" ]
tap_check $? "small stack: the trace was written"

PINCACHE_STAGE_THREADS=4 PINCACHE_REPORT="$SIM_TMP/segv.json" st shim segv
point $? "a SIGSEGV handler opens the pages that staged copies touch, on pincache's threads too"
check_stat "$SIM_TMP/segv.json" stage_h2d_calls -eq 2 "segv: both copies to the device were staged"
check_stat "$SIM_TMP/segv.json" stage_d2h_calls -eq 1 "segv: the copy from the device was staged"

PINCACHE_REPORT="$SIM_TMP/exit.json" SIM_TIMEOUT=60 st shim exit
point $? "exit() while other threads are inside calls, some stuck for good: the process ends"
check_stat "$SIM_TMP/exit.json" stage_h2d_calls -ge 2 "exit: the report was written"

PINCACHE_MAX_CACHED=0 PINCACHE_REPORT="$SIM_TMP/fork.json" st shim fork
point $? "fork children made while fast blocks are made have none of their memfds"
check_stat "$SIM_TMP/fork.json" fast_alloc_calls -ge 10 "fork: fast blocks were made meanwhile"
tap_done
