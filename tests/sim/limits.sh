#!/bin/sh
# limits: pincache's threads (the copy threads, the reaper) take no task a
# pids limit or RLIMIT_NPROC would leave the program (util/tasks.h), and
# staging works without them.  tests/sim/limits.c: its line "copy=N
# unmap=M made=K" counts pincache's threads and the threads the program
# could make after its work; its exit status names a failed check (the
# bytes of an 8 MiB staged copy, errno left alone by successful calls).
#  - a fake limit (PINCACHE_TEST_LIMITS_ROOT, a folder standing for /):
#    cgroup v2 with the limit on an ancestor, v1's pids hierarchy,
#    RLIMIT_NPROC in a rootless container, "max", no files at all;
#  - a real pids cgroup (as root, where a pids hierarchy lets us make
#    one): near its limit the program makes as many threads under pincache
#    as plainly; with the limit hidden from pincache, its threads are
#    refused (EAGAIN) and the calls still succeed, errno untouched;
#  - a real RLIMIT_NPROC (as root: the program turns into nobody): as many
#    threads under pincache as plainly.  Not testable as any other user
#    (the limit would count the user's other processes).
. "$top_srcdir/tests/sim/common.sh"
P=$SIM_BIN/limits
CG=
# The cgroup goes once its last task has gone (a moment after the exit).
cleanup() {
	_i=0
	while [ -n "$CG" ] && [ -d "$CG" ] && ! rmdir "$CG" 2>/dev/null && [ $_i -lt 50 ]; do
		sleep 0.1
		_i=$((_i + 1))
	done
	rm -rf "$SIM_TMP"
}
trap cleanup EXIT
# Four participants (three copy threads), every fast block released at once
# (the reaper starts), each process on its own budget.
PINCACHE_STAGE_THREADS=4
PINCACHE_MAX_CACHED=0
PINCACHE_NODE_SHARE=off
PINCACHE_REPORT=off
export PINCACHE_STAGE_THREADS PINCACHE_MAX_CACHED PINCACHE_NODE_SHARE PINCACHE_REPORT

# go NAME plain|shim ARGS...: limits ARGS, its line in $SIM_TMP/NAME.out,
# its status in $st
go() {
	_n=$1
	shift
	run_prog "$@" >"$SIM_TMP/$_n.out" 2>"$SIM_TMP/$_n.err"
	st=$?
	sed 's/^/# stderr: /' "$SIM_TMP/$_n.err" | head -n 20
}
# got NAME WANT TEXT: one point, ok when its line is WANT and its status 0
got() {
	_g=$(cat "$SIM_TMP/$1.out")
	[ "$st" = 0 ] && [ "$_g" = "$2" ]
	tap_check $? "$3 ($_g, exit status $st)"
}
# made NAME: K of its line
made() {
	sed -n 's/.*made=\([0-9]*\).*/\1/p' "$SIM_TMP/$1.out"
}

go plain plain "$P" count
got plain "copy=0 unmap=0 made=0" "plain: the work, no thread of pincache's"
if ! have_shim; then
	tap_skip "libpincache.so not built"
	tap_done
	exit 0
fi

# A fake file system: F/proc/self/cgroup and the pids files it leads to.
F=$SIM_TMP/root
V2=$F/sys/fs/cgroup
mkdir -p "$F/proc/self" "$V2/kube/pod/ctr" "$V2/pids/job" || exit 99
printf '0::/kube/pod/ctr\n' >"$F/proc/self/cgroup"
echo max >"$V2/kube/pod/ctr/pids.max"
echo 3 >"$V2/kube/pod/ctr/pids.current"
echo 120 >"$V2/kube/pod/pids.max"
echo 100 >"$V2/kube/pod/pids.current"
export PINCACHE_TEST_LIMITS_ROOT="$F"

go v2near shim "$P" count
got v2near "copy=0 unmap=0 made=0" "v2, the pod's limit 20 tasks away: no copy thread, no reaper, the copy staged right"
PINCACHE_REPORT="$SIM_TMP/v2near.json" go v2nearj shim "$P" count
check_stat "$SIM_TMP/v2near.json" stage_h2d_calls -eq 1 "v2 near the limit: the copy to the device was staged"
check_stat "$SIM_TMP/v2near.json" stage_d2h_calls -eq 1 "v2 near the limit: the copy from the device was staged"
check_stat "$SIM_TMP/v2near.json" fast_free_calls -ge 1 "v2 near the limit: fast blocks were released (on the calling thread)"
echo 4100 >"$V2/kube/pod/pids.max"
go v2far shim "$P" count
got v2far "copy=3 unmap=1 made=0" "v2, 4000 tasks from the limit: three copy threads and the reaper"
echo 170 >"$V2/kube/pod/pids.max"
PINCACHE_STAGE_THREADS=16 go v2part shim "$P" count
got v2part "copy=6 unmap=1 made=0" "v2, 70 tasks from the limit: 6 of 15 copy threads (all but 64), and the reaper"
echo max >"$V2/kube/pod/pids.max"
go v2max shim "$P" count
got v2max "copy=3 unmap=1 made=0" "v2, pids.max \"max\" all the way up: the usual threads"

printf '9:cpu,cpuacct:/job\n8:pids:/job\n0::/\n' >"$F/proc/self/cgroup"
echo 50 >"$V2/pids/job/pids.max"
echo 2 >"$V2/pids/job/pids.current"
go v1near shim "$P" count
got v1near "copy=0 unmap=0 made=0" "v1's pids hierarchy, 48 tasks from the limit: no thread"

# RLIMIT_NPROC, for root in a rootless container (the kernel exempts only
# the initial namespace's root), 5030 against 5000 tasks on the host.
printf '0::/\n' >"$F/proc/self/cgroup"
printf '         0     100000      65536\n' >"$F/proc/self/uid_map"
printf '0.00 0.00 0.00 1/5000 4242\n' >"$F/proc/loadavg"
go nprocnear shim "$P" count 5030
got nprocnear "copy=0 unmap=0 made=0" "RLIMIT_NPROC 30 tasks above the host's: no thread"
go nprocfar shim "$P" count 6000
got nprocfar "copy=3 unmap=1 made=0" "RLIMIT_NPROC 1000 tasks above the host's: the usual threads"

export PINCACHE_TEST_LIMITS_ROOT="$SIM_TMP/none"
go none shim "$P" count
got none "copy=3 unmap=1 made=0" "no file to read: no limit, the usual threads"
unset PINCACHE_TEST_LIMITS_ROOT

# A real pids cgroup: a new one under this process's, where a pids
# hierarchy (v1's, or v2 with the controller given to children) has one.
pids_dir() {
	_v1=$(sed -n 's/^[0-9]*:\([^:]*,\)*pids\(,[^:]*\)*:\(.*\)$/\3/p' /proc/self/cgroup | head -n 1)
	if [ -n "$_v1" ]; then
		echo "/sys/fs/cgroup/pids${_v1%/}"
	else
		_v2=$(sed -n 's/^0:://p' /proc/self/cgroup | head -n 1)
		[ -n "$_v2" ] && echo "/sys/fs/cgroup${_v2%/}"
	fi
}
# in_cg MAX NAME plain|shim ARGS...: go, in the cgroup, pids.max MAX (the
# shell that moves itself there runs without pincache)
in_cg() {
	echo "$1" >"$CG/pids.max" || return 1
	_n=$2
	_m=$3
	shift 3
	if [ "$_m" = shim ]; then
		_pre=$PINCACHE_LIB
		_rt=$(san_runtime "$1")
		[ -n "$_rt" ] && _pre="$_rt $_pre"
		set -- env LD_PRELOAD="$_pre" "$@"
	fi
	# shellcheck disable=SC2016
	go "$_n" plain sh -c 'echo $$ >"$0/cgroup.procs" && exec "$@"' "$CG" "$@"
}
if [ "$(id -u)" = 0 ] && _d=$(pids_dir) && [ -d "$_d" ] &&
	mkdir "$_d/pincache-limits.$$" 2>/dev/null; then
	CG=$_d/pincache-limits.$$
	[ -f "$CG/pids.max" ] || { rmdir "$CG"; CG=; }
fi
if [ -n "$CG" ]; then
	echo "# a real pids cgroup: $CG"
	# The program starts with two tasks (main, the simulated legacy
	# stream's worker): 38 left, none of them for pincache.
	in_cg 40 cgplain plain "$P" fill
	got cgplain "copy=0 unmap=0 made=$(made cgplain)" "pids.max 40, plain: $(made cgplain) threads made after the work"
	in_cg 40 cgshim shim "$P" fill
	got cgshim "copy=0 unmap=0 made=$(made cgplain)" "pids.max 40, pincache: as many threads made, none taken"
	# Hidden: pincache asks for four threads where three tasks are left.
	PINCACHE_TEST_LIMITS_ROOT=$SIM_TMP/none in_cg 5 cgrefused shim "$P" count
	got cgrefused "copy=3 unmap=0 made=0" "pids.max 5 hidden from pincache: the reaper refused (EAGAIN), the calls succeed with errno untouched"
else
	tap_skip "a real pids cgroup: needs root and a pids hierarchy to make one in"
	tap_skip "a real pids cgroup: pincache"
	tap_skip "a real pids cgroup: refused"
fi

if [ "$(id -u)" = 0 ]; then
	# As nobody: the limit counts nobody's tasks, and pincache (not the
	# initial namespace's root any more) reads the host's 5000-odd tasks
	# against 40.
	go nplain plain "$P" fill 40
	got nplain "copy=0 unmap=0 made=$(made nplain)" "RLIMIT_NPROC 40 as nobody, plain: $(made nplain) threads made after the work"
	go nshim shim "$P" fill 40
	got nshim "copy=0 unmap=0 made=$(made nplain)" "RLIMIT_NPROC 40 as nobody, pincache: as many threads made, none taken"
else
	tap_skip "a real RLIMIT_NPROC: needs root (to become nobody, whose tasks alone it counts)"
	tap_skip "a real RLIMIT_NPROC: pincache"
fi
tap_done
