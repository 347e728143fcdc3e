#!/bin/sh
# limits: what pincache adds of its own takes nothing a container's limits
# would leave the program (util/limits.h).  Its threads (the copy threads,
# the reaper) take no task a pids limit or RLIMIT_NPROC leaves it, and
# staging works without them; near a memory limit the staging ring (pinned
# memory the program never asked for) is not grown, and a released fast
# block is unmapped before its free returns.  tests/sim/limits.c: its line
# "copy=N unmap=M made=K" counts pincache's threads and the threads the
# program could make after its work; its exit status names a failed check
# (the bytes of the staged copies, errno left alone by successful calls).
#  - fake limits (PINCACHE_TEST_LIMITS_ROOT, a folder standing for /):
#    pids: cgroup v2 with the limit on an ancestor, v1's pids hierarchy,
#    RLIMIT_NPROC in a rootless container, "max", no files at all; memory:
#    v2 near the limit, page cache counted free, room for two chunks, v1;
#  - a real pids cgroup (as root, where a pids hierarchy lets us make
#    one): near its limit the program makes as many threads under pincache
#    as plainly; with the limit hidden from pincache, its threads are
#    refused (EAGAIN) and the calls still succeed, errno untouched;
#  - real memory cgroups (likewise), limited to 32 MiB above the program's
#    plain peak: 64 MiB staged copies, and a 256 MiB block freed and made
#    again three times, succeed under pincache as plainly (with the limit
#    hidden from pincache, both were seen killed by the OOM killer);
#  - a real RLIMIT_NPROC (as root: the program turns into nobody): as many
#    threads under pincache as plainly.  Not testable as any other user
#    (the limit would count the user's other processes).
. "$top_srcdir/tests/sim/common.sh"
P=$SIM_BIN/limits
CGS=
# The cgroups go once their last task has gone (a moment after the exit).
cleanup() {
	for _c in $CGS; do
		_i=0
		while [ -d "$_c" ] && ! rmdir "$_c" 2>/dev/null && [ $_i -lt 50 ]; do
			sleep 0.1
			_i=$((_i + 1))
		done
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
	echo "$st" >"$SIM_TMP/$_n.st"
	sed 's/^/# stderr: /' "$SIM_TMP/$_n.err" | head -n 20
}
# got NAME WANT TEXT: one point, ok when its line is WANT and its status 0
got() {
	_g=$(cat "$SIM_TMP/$1.out")
	_s=$(cat "$SIM_TMP/$1.st")
	[ "$_s" = 0 ] && [ "$_g" = "$2" ]
	tap_check $? "$3 ($_g, exit status $_s)"
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
PINCACHE_REPORT="$SIM_TMP/none.json" go none shim "$P" count
got none "copy=3 unmap=1 made=0" "no file to read: no limit, the usual threads"
check_stat "$SIM_TMP/none.json" stage_ring_bytes_peak -eq 20971520 "no file to read: the ring grew to five 4 MiB chunks (one a piece)"

# Memory limits (the pod's, 1 GiB): the ring (five chunks for an 8 MiB
# copy) only where 256 MiB and half of what is left remain besides, and
# released blocks unmapped at once (no reaper) where they would not.
F=$SIM_TMP/mroot
V2=$F/sys/fs/cgroup
mkdir -p "$F/proc/self" "$V2/kube/pod/ctr" "$V2/memory/job" || exit 99
export PINCACHE_TEST_LIMITS_ROOT="$F"
printf '0::/kube/pod/ctr\n' >"$F/proc/self/cgroup"
echo max >"$V2/kube/pod/ctr/memory.max"
echo 1073741824 >"$V2/kube/pod/memory.max"
# mem NAME CURRENT FILE SHMEM: the pod's charge and memory.stat, in MiB
mem() {
	echo $(($2 << 20)) >"$V2/kube/pod/memory.current"
	printf 'anon %d\nfile %d\nkernel 4096\nshmem %d\n' $((($2 - $3) << 20)) $(($3 << 20)) $(($4 << 20)) \
		>"$V2/kube/pod/memory.stat"
	PINCACHE_REPORT="$SIM_TMP/$1.json" go "$1" shim "$P" count
}
mem mnear 900 100 50
got mnear "copy=3 unmap=0 made=0" "v2, the pod's limit 174 MiB away: blocks unmapped at once, the copies right"
check_stat "$SIM_TMP/mnear.json" stage_ring_bytes_peak -eq 0 "v2, 174 MiB left: no ring"
check_stat "$SIM_TMP/mnear.json" stage_h2d_driver_calls -eq 1 "v2, 174 MiB left: the copy to the device left to the runtime"
mem mcache 900 700 0
got mcache "copy=3 unmap=1 made=0" "v2, 900 MiB charged, 700 of it page cache: the reaper"
check_stat "$SIM_TMP/mcache.json" stage_ring_bytes_peak -eq 20971520 "v2, page cache counted free: the ring as without a limit"
mem mpart 760 0 0
check_stat "$SIM_TMP/mpart.json" stage_ring_bytes_peak -eq 8388608 "v2, 264 MiB left: two chunks (8 MiB beyond 256)"
check_stat "$SIM_TMP/mpart.json" stage_h2d_calls -eq 1 "v2, 264 MiB left: the copy staged on them"
printf '4:memory:/job\n0::/\n' >"$F/proc/self/cgroup"
echo 1073741824 >"$V2/memory/job/memory.limit_in_bytes"
echo 1006632960 >"$V2/memory/job/memory.usage_in_bytes"
printf 'cache 0\ntotal_cache 0\ntotal_shmem 0\n' >"$V2/memory/job/memory.stat"
PINCACHE_REPORT="$SIM_TMP/mv1.json" go mv1 shim "$P" count
got mv1 "copy=3 unmap=0 made=0" "v1's memory hierarchy, 64 MiB left: blocks unmapped at once"
check_stat "$SIM_TMP/mv1.json" stage_ring_bytes_peak -eq 0 "v1, 64 MiB left: no ring"
unset PINCACHE_TEST_LIMITS_ROOT

# Real cgroups: a new one under this process's in a hierarchy (v1's of
# the controller, or v2's where it is given to children) that has one.
cg_dir() {
	_v1=$(sed -n "s/^[0-9]*:\([^:]*,\)*$1\(,[^:]*\)*:\(.*\)\$/\3/p" /proc/self/cgroup | head -n 1)
	if [ -n "$_v1" ]; then
		echo "/sys/fs/cgroup/$1${_v1%/}"
	else
		_v2=$(sed -n 's/^0:://p' /proc/self/cgroup | head -n 1)
		[ -n "$_v2" ] && echo "/sys/fs/cgroup${_v2%/}"
	fi
}
# cg_make CONTROLLER FILE [NAME]: CGN, a new cgroup (on CGS, to be
# removed at the end) that has FILE; 1 if none
cg_make() {
	CGN=
	[ "$(id -u)" = 0 ] || return 1
	_n=$(cg_dir "$1")/pincache-limits-$1${3:+-$3}.$$
	[ -d "${_n%/*}" ] && mkdir "$_n" 2>/dev/null || return 1
	CGS="$CGS $_n"
	[ -f "$_n/$2" ] || return 1
	CGN=$_n
}
# in_cg DIR NAME plain|shim ARGS...: go, in cgroup DIR (the shell that
# moves itself there runs without pincache)
in_cg() {
	_c=$1
	_n=$2
	_m=$3
	shift 3
	if [ "$_m" = shim ]; then
		set -- env LD_PRELOAD="$(shim_preload "$1")" "$@"
	fi
	# shellcheck disable=SC2016
	go "$_n" plain sh -c 'echo $$ >"$0/cgroup.procs" && exec "$@"' "$_c" "$@"
}
if cg_make pids pids.max; then
	CG=$CGN
	echo "# a real pids cgroup: $CG"
	# The program starts with two tasks (main, the simulated legacy
	# stream's worker): 38 left, none of them for pincache.
	echo 40 >"$CG/pids.max"
	in_cg "$CG" cgplain plain "$P" fill
	got cgplain "copy=0 unmap=0 made=$(made cgplain)" "pids.max 40, plain: $(made cgplain) threads made after the work"
	in_cg "$CG" cgshim shim "$P" fill
	got cgshim "copy=0 unmap=0 made=$(made cgplain)" "pids.max 40, pincache: as many threads made, none taken"
	# Hidden: pincache asks for four threads where three tasks are left.
	echo 5 >"$CG/pids.max"
	PINCACHE_TEST_LIMITS_ROOT=$SIM_TMP/none in_cg "$CG" cgrefused shim "$P" count
	got cgrefused "copy=3 unmap=0 made=0" "pids.max 5 hidden from pincache: the reaper refused (EAGAIN), the calls succeed with errno untouched"
else
	tap_skip "a real pids cgroup: needs root and a pids hierarchy to make one in"
	tap_skip "a real pids cgroup: pincache"
	tap_skip "a real pids cgroup: refused"
fi

# Real memory limits, 32 MiB above what the program takes plainly: in a
# new memory cgroup (v1's files or v2's), MODE plainly with no limit, then
# plainly and under pincache with that limit (and once with the limit
# hidden from pincache, to show it bites: killed, 137).  mem_cg MODE: 1 if
# no such cgroup can be made.
mem_cg() {
	cg_make memory cgroup.procs "$1" || return 1
	if [ -f "$CGN/memory.limit_in_bytes" ] && [ -f "$CGN/memory.max_usage_in_bytes" ]; then
		_lim=memory.limit_in_bytes
		_peak=memory.max_usage_in_bytes
	elif [ -f "$CGN/memory.max" ] && [ -f "$CGN/memory.peak" ]; then
		_lim=memory.max
		_peak=memory.peak
		[ -f "$CGN/memory.swap.max" ] && echo 0 >"$CGN/memory.swap.max"
	else
		return 1
	fi
	in_cg "$CGN" "$1peak" plain "$P" "$1"
	_p=$(cat "$CGN/$_peak")
	echo "# a real memory cgroup, $CGN: $1 plainly at most $((_p >> 20)) MiB (exit status $st)"
	echo $((_p + (32 << 20))) >"$CGN/$_lim" || return 1
	in_cg "$CGN" "$1plain" plain "$P" "$1"
	PINCACHE_REPORT="$SIM_TMP/$1shim.json" in_cg "$CGN" "$1shim" shim "$P" "$1"
	PINCACHE_TEST_LIMITS_ROOT=$SIM_TMP/none in_cg "$CGN" "$1hidden" shim "$P" "$1"
	echo "# $1 with the limit hidden from pincache: exit status $st (137: killed)"
}
if mem_cg big; then
	got bigplain "copy=0 unmap=0 made=0" "64 MiB copies, a memory limit 32 MiB above their plain peak, plain: the work"
	got bigshim "copy=3 unmap=0 made=0" "the same under pincache: blocks unmapped at once, the work"
	check_stat "$SIM_TMP/bigshim.json" stage_ring_bytes_peak -eq 0 "the same under pincache: no ring"
else
	tap_skip "a real memory cgroup: needs root and a memory hierarchy to make one in"
	tap_skip "a real memory cgroup: pincache"
	tap_skip "a real memory cgroup: no ring"
fi
if mem_cg churn; then
	got churnplain churned "256 MiB freed and made again three times, a memory limit 32 MiB above the plain peak, plain"
	got churnshim churned "256 MiB freed (released) and made again three times, a memory limit 32 MiB above the plain peak, under pincache: each released block unmapped before its free returns"
else
	tap_skip "a real memory cgroup: churn, plain"
	tap_skip "a real memory cgroup: churn, pincache"
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
