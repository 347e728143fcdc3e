#!/bin/sh
# signals: nothing pincache writes may end the program with a signal it
# would not have got plainly (util/sigguard.h).  A program that writes
# nothing (tests/sim/quiet), run by sigrun:
#  - with its stderr a pipe nobody reads: pincache's exit report, its log
#    lines and a JSON report through /dev/stderr fail with EPIPE, and the
#    program still exits 0 (it died of SIGPIPE at its exit before);
#  - with its stderr a full pipe whose reader reads only after the end:
#    pincache's exit report gives up after 2 s instead of hanging the exit;
#  - under RLIMIT_FSIZE (`ulimit -f`): a fast block (a memfd sized past the
#    limit raised SIGXFSZ), the node's shared file and the report fail or
#    take another way, and the program still exits 0.
. "$top_srcdir/tests/sim/common.sh"
Q=$SIM_BIN/quiet
RUN=$SIM_BIN/sigrun

# how NAME SIGRUN-ARGS -- [VAR=VALUE...]: quiet under pincache (plainly for
# a NAME plain*), its ending in $SIM_TMP/NAME.how, stderr in NAME.err
how() {
	_n=$1
	shift
	_a=
	while [ "$1" != -- ]; do _a="$_a $1"; shift; done
	shift
	case $_n in plain*) _plain=1 ;; *) _plain=0 ;; esac
	if [ $_plain = 1 ]; then
		# shellcheck disable=SC2086
		"$RUN" $_a -- env -u LD_PRELOAD "$@" "$Q" >"$SIM_TMP/$_n.how" 2>"$SIM_TMP/$_n.err"
	else
		# shellcheck disable=SC2086
		"$RUN" $_a -- env LD_PRELOAD="$(shim_preload "$Q")" "$@" "$Q" >"$SIM_TMP/$_n.how" 2>"$SIM_TMP/$_n.err"
	fi
	sed 's/^/# stderr: /' "$SIM_TMP/$_n.err" | grep -v '^# stderr: pincache\[[0-9]*\]:  ' | head -n 20
}
# ended NAME WANT TEXT
ended() {
	_g=$(paste -sd' ' "$SIM_TMP/$1.how")
	[ "$_g" = "$2" ]
	tap_check $? "$3 ($_g)"
}

how plain --closed-stderr --
ended plain "exit 0" "plain, stderr a closed pipe: the program exits 0"
how plainf --fsize 0 --
ended plainf "exit 0" "plain, ulimit -f 0: the program exits 0"
if ! have_shim; then
	tap_skip "libpincache.so not built"
	tap_done
	exit 0
fi

how dflt --closed-stderr --
ended dflt "exit 0" "stderr a closed pipe: the exit report (text, to stderr) does not end the program"
how logs --closed-stderr -- PINCACHE_LOG=debug PINCACHE_MAX_CACHED=banana
ended logs "exit 0" "stderr a closed pipe: warnings and debug lines do not end it"
how json --closed-stderr -- PINCACHE_REPORT=/dev/stderr PINCACHE_TRACE=/dev/stderr
ended json "exit 0" "stderr a closed pipe: the JSON report and the trace through /dev/stderr do not end it"

# A stderr pipe that is full, whose reader reads only after the program has
# ended: plainly the program exits at once; pincache's exit report waits
# for room 2 s at most, then is dropped (before, the exit hung for good).
how plainfull --full-stderr --
ended plainfull "exit 0 wrote 0" "plain, stderr a full pipe nobody reads yet: the program exits 0"
how full --full-stderr -- PINCACHE_REPORT=stderr
ended full "exit 0 wrote 0" "stderr a full pipe nobody reads yet: the exit report does not hang the exit"

# 1 MiB: the report fits; a 64 MiB block's memfds (one per copy thread)
# do not, so its chunks are faulted-in shared memory instead.
how f1m --fsize 1048576 -- PINCACHE_REPORT="$SIM_TMP/f1m.json"
ended f1m "exit 0" "ulimit -f 1M: a 64 MiB pinned block does not end the program"
check_stat "$SIM_TMP/f1m.json" fast_alloc_bytes -ge 67108864 "ulimit -f 1M: the block was still a fast one"
check_stat "$SIM_TMP/f1m.json" stage_h2d_calls -eq 1 "ulimit -f 1M: the pageable copy was staged"
check_stat "$SIM_TMP/f1m.json" node_ranks_peak -eq 1 "ulimit -f 1M: the node's shared file was made"

mkdir -p "$SIM_TMP/f0"
how f0 --fsize 0 -- PINCACHE_REPORT="$SIM_TMP/f0/r.json" PINCACHE_LOG=info PINCACHE_NODE_SHARE_DIR="$SIM_TMP/f0"
ended f0 "exit 0" "ulimit -f 0: neither the block, the shared file nor the report ends the program"
grep -q "cannot write the report to $SIM_TMP/f0/r.json: File too large" "$SIM_TMP/f0.err"
tap_check $? "ulimit -f 0: one warning says the report could not be written"
grep -q "node share: no shared file in $SIM_TMP/f0" "$SIM_TMP/f0.err"
tap_check $? "ulimit -f 0: the node share says it has no shared file"
n=$(find "$SIM_TMP/f0" -type f | wc -l)
tap_check "$([ "$n" -eq 0 ]; echo $?)" "ulimit -f 0: no report, no shared file, no temporary file left ($n files)"
tap_done
