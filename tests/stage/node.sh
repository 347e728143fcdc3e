#!/bin/sh
# node: the node's share of staging (PINCACHE_NODE_SHARE, src/stage/node.h)
# on the simulated device.  Ranks are tests/stage/noderank processes staging
# pageable copies; every run's line (copies, wrong bytes, failed calls, a
# digest of the bytes read back) must be the plain run's.
#   a  four ranks started together: each one's last share (node_threads)
#      is the budget (PINCACHE_STAGE_THREADS=8) over the ranks counted, the
#      sum at most the budget; ranks of two GPUs (SIM_PCI_BUS) count apart
#   b  a rank killed by SIGKILL mid-copy: the rank staging beside it takes
#      the whole budget back at once (the dead rank's stamp is still recent:
#      only its lock says it is gone); a file left by a killed rank is
#      reused by a later one, which removes it at exit
#   c  the file is gone once every rank has exited
#   d  a file at the name that is not pincache's own (another user's, mode
#      0644, a second link, the wrong size, garbage, a FIFO, a folder) is
#      refused with one warning and left as it was; the rank stages alone
#   e  a symbolic link at the name is not followed (its target unchanged,
#      or not created)
#   f  a fork child holds no share: a parent killed while its child sleeps
#      gives its share back; a child that exits normally leaves the parent's
#      membership and the file alone
#   g  PINCACHE_NODE_SHARE=off: no file, the copy threads as before
#   h  bad PINCACHE_NODE_SHARE and PINCACHE_NODE_SHARE_DIR values: one
#      warning each, and the default
. "$top_srcdir/tests/sim/common.sh"

R=$top_builddir/tests/stage/noderank
SHM=$PINCACHE_NODE_SHARE_DIR
NAME=pincache-node-v1-$(id -u)
SEG=$SHM/$NAME
BUDGET=8
SIZE=2M
unset PINCACHE_STAGE PINCACHE_STAGE_MIN PINCACHE_STAGE_RING PINCACHE_STAGE_CHUNK PINCACHE_MODE \
	PINCACHE_NODE_SHARE SIM_PCI_BUS LOCAL_WORLD_SIZE OMPI_COMM_WORLD_LOCAL_SIZE SLURM_NTASKS_PER_NODE
PINCACHE_STAGE_THREADS=$BUDGET
PINCACHE_REPORT=off
export PINCACHE_STAGE_THREADS PINCACHE_REPORT

# same_as_plain OUT TEXT: OUT's line is the plain run's
same_as_plain() {
	cmp -s "$SIM_TMP/plain.out" "$1"
	tap_check $? "$2: the copies as plainly ($(cat "$1" 2>/dev/null))"
}

# wait_for FILE...: until each exists (bounded)
wait_for() {
	for _f in "$@"; do
		_i=0
		while [ ! -e "$_f" ] && [ $_i -lt 1200 ]; do
			sleep 0.1
			_i=$((_i + 1))
		done
	done
}

# no_file TEXT: nothing of pincache's left in the folder
no_file() {
	_left=$(ls -A "$SHM" 2>/dev/null)
	[ -z "$_left" ]
	tap_check $? "$1: the folder is empty (${_left:-nothing left})"
}

# shim_bg PROG ARGS...: PROG under the shim in the background, $! its own
# pid (to be killed), its output thrown away
shim_bg() {
	env LD_PRELOAD="$(shim_preload "$1")" "$@" >/dev/null 2>&1 &
}

# min A B
min() {
	[ "$1" -lt "$2" ] && echo "$1" || echo "$2"
}

run_prog plain "$R" -s $SIZE >"$SIM_TMP/plain.out" 2>"$SIM_TMP/plain.err"
tap_check $? "plain: noderank runs ($(cat "$SIM_TMP/plain.out"))"
if ! have_shim; then
	tap_skip "shim: libpincache.so not built"
	tap_done
	exit 0
fi
cpus=$(getconf _NPROCESSORS_ONLN 2>/dev/null || nproc)
node=$((cpus > BUDGET ? cpus : BUDGET))   # the node's budget: its CPUs, at least one GPU's

# --- a: four ranks started together -------------------------------------
mkdir -p "$SIM_TMP/bar"
for i in 1 2 3 4; do
	PINCACHE_REPORT=$SIM_TMP/a$i.json run_prog shim "$R" -s $SIZE -b "$SIM_TMP/bar" -N 4 \
		>"$SIM_TMP/a$i.out" 2>"$SIM_TMP/a$i.err" &
done
wait
want=$(min $((BUDGET / 4)) $((node / 4)))
sum=0
for i in 1 2 3 4; do
	sed 's/^/# a'$i' stderr: /' "$SIM_TMP/a$i.err" | head -n 5
	same_as_plain "$SIM_TMP/a$i.out" "a: rank $i"
	check_stat "$SIM_TMP/a$i.json" node_threads -eq "$want" "a: rank $i's last share is $want threads"
	check_stat "$SIM_TMP/a$i.json" node_ranks -eq 4 "a: rank $i counted four ranks"
	check_stat "$SIM_TMP/a$i.json" stage_h2d_calls -gt 0 "a: rank $i staged"
	sum=$((sum + $(report_stat node_threads "$SIM_TMP/a$i.json")))
done
[ "$sum" -le "$BUDGET" ]
tap_check $? "a: the four shares sum to $sum, at most the budget $BUDGET"
# c: the last one out removed the file
no_file "c: after four ranks"

# Two GPUs: two ranks on bus 16, one on bus 17.
rm -rf "$SIM_TMP/bar" && mkdir -p "$SIM_TMP/bar"
for i in 1 2 3; do
	bus=16; [ $i = 3 ] && bus=17
	SIM_PCI_BUS=$bus PINCACHE_REPORT=$SIM_TMP/g$i.json run_prog shim "$R" -s $SIZE -b "$SIM_TMP/bar" -N 3 \
		>"$SIM_TMP/g$i.out" 2>"$SIM_TMP/g$i.err" &
done
wait
for i in 1 2 3; do
	rg=2; [ $i = 3 ] && rg=1
	want=$(min $((BUDGET / rg)) $((node / 3)))
	same_as_plain "$SIM_TMP/g$i.out" "a, two GPUs: rank $i"
	check_stat "$SIM_TMP/g$i.json" node_ranks -eq $rg "a, two GPUs: rank $i counts $rg on its GPU"
	check_stat "$SIM_TMP/g$i.json" node_threads -eq "$want" "a, two GPUs: rank $i's share is $want"
done
no_file "c: after ranks of two GPUs"

# --- b: a rank killed mid-copy ------------------------------------------
# C stages on until told, then 400 ms more; A stages beside it until killed.
PINCACHE_REPORT=$SIM_TMP/c.json run_prog shim "$R" -s $SIZE -m "$SIM_TMP/c.on" -u "$SIM_TMP/killed" -t 400 \
	>"$SIM_TMP/c.out" 2>"$SIM_TMP/c.err" &
cpid=$!
wait_for "$SIM_TMP/c.on"
shim_bg "$R" -s $SIZE -m "$SIM_TMP/a.on" -u "$SIM_TMP/never"
apid=$!
wait_for "$SIM_TMP/a.on"
sleep 0.3                    # both staging, each counting the other
kill -9 $apid
wait $apid 2>/dev/null
touch "$SIM_TMP/killed"
wait $cpid
same_as_plain "$SIM_TMP/c.out" "b: the rank beside the killed one"
check_stat "$SIM_TMP/c.json" node_threads_peak -eq "$BUDGET" "b: it had the whole budget alone"
check_stat "$SIM_TMP/c.json" node_share_changes -ge 2 "b: its share shrank for the other rank and grew back"
check_stat "$SIM_TMP/c.json" node_threads -eq "$BUDGET" "b: within 400 ms of the kill it has the whole budget again"
check_stat "$SIM_TMP/c.json" node_ranks -eq 1 "b: it counts itself alone"
no_file "c: after a rank was killed beside another"

# The file of ranks that all died is reused by a later one, which removes
# it at exit.  H takes slot 0 and leaves normally; K, in slot 1, is killed,
# its stamp still recent: the later rank (in slot 0) must see it dead.
shim_bg "$R" -s $SIZE -m "$SIM_TMP/h0.on" -w "$SIM_TMP/h0.go"
hpid=$!
wait_for "$SIM_TMP/h0.on"
shim_bg "$R" -s $SIZE -m "$SIM_TMP/k.on" -u "$SIM_TMP/never"
kpid=$!
wait_for "$SIM_TMP/k.on"
touch "$SIM_TMP/h0.go"
wait $hpid
kill -9 $kpid
wait $kpid 2>/dev/null
[ -f "$SEG" ]
tap_check $? "b: the ranks' file is left when the last one was killed"
PINCACHE_REPORT=$SIM_TMP/later.json run_prog shim "$R" -s $SIZE >"$SIM_TMP/later.out" 2>"$SIM_TMP/later.err"
same_as_plain "$SIM_TMP/later.out" "b: the later rank"
check_stat "$SIM_TMP/later.json" node_threads -eq "$BUDGET" "b: the later rank has the whole budget"
check_stat "$SIM_TMP/later.json" node_ranks -eq 1 "b: the later rank counts itself alone"
check_stat "$SIM_TMP/later.json" node_refused -eq 0 "b: the later rank reused the file"
no_file "c: the later rank removed the file left by the killed one"

# --- d: files that are not pincache's own --------------------------------
# A real file, copied while a rank holds it.
PINCACHE_REPORT=off run_prog shim "$R" -s $SIZE -m "$SIM_TMP/h.on" -w "$SIM_TMP/h.go" >/dev/null 2>&1 &
hpid=$!
wait_for "$SIM_TMP/h.on"
cp "$SEG" "$SIM_TMP/valid.seg"
touch "$SIM_TMP/h.go"
wait $hpid
size=$(wc -c <"$SIM_TMP/valid.seg")
[ "$size" -gt 0 ]
tap_check $? "d: a file of pincache's made and copied ($size bytes)"

# refused LABEL REASON: run one rank over whatever is at $SEG; it must
# refuse it with one warning, stage with its own budget, and leave it be.
refused() {
	_sum=$(ls -ld "$SEG" 2>/dev/null | awk '{print $1, $3, $5}'; [ -f "$SEG" ] && cksum <"$SEG")
	PINCACHE_LOG=info PINCACHE_REPORT=$SIM_TMP/r.json run_prog shim "$R" -s $SIZE \
		>"$SIM_TMP/r.out" 2>"$SIM_TMP/r.err"
	same_as_plain "$SIM_TMP/r.out" "$1"
	check_stat "$SIM_TMP/r.json" node_refused -eq 1 "$1: refused"
	check_stat "$SIM_TMP/r.json" node_threads -eq 0 "$1: no share taken"
	_n=$(grep -c "warning: node share: .*refused ($2)" "$SIM_TMP/r.err")
	[ "$_n" = 1 ]
	tap_check $? "$1: one warning saying '$2' (got $_n)"
	grep -q "staging with $BUDGET copy threads" "$SIM_TMP/r.err"
	tap_check $? "$1: staged with its own $BUDGET copy threads"
	[ "$_sum" = "$(ls -ld "$SEG" 2>/dev/null | awk '{print $1, $3, $5}'; [ -f "$SEG" ] && cksum <"$SEG")" ]
	tap_check $? "$1: the file at the name is as it was"
	rm -rf "$SEG"
}

if [ "$(id -u)" = 0 ]; then
	cp "$SIM_TMP/valid.seg" "$SEG" && chmod 600 "$SEG" && chown 65534:65534 "$SEG"
	refused "d: another user's file" "owned by another user"
else
	tap_skip "d: another user's file (needs root to make one)"
fi
cp "$SIM_TMP/valid.seg" "$SEG" && chmod 644 "$SEG"
refused "d: mode 0644" "its mode is not 0600"
cp "$SIM_TMP/valid.seg" "$SIM_TMP/other" && chmod 600 "$SIM_TMP/other" && ln "$SIM_TMP/other" "$SEG"
refused "d: a second link" "it has other links"
head -c 100 "$SIM_TMP/valid.seg" >"$SEG" && chmod 600 "$SEG"
refused "d: 100 bytes" "not the expected size"
head -c "$size" /dev/urandom >"$SEG" && chmod 600 "$SEG"
refused "d: garbage" "its header is not pincache's"
mkfifo -m 600 "$SEG"
refused "d: a FIFO" "not a regular file"
mkdir -m 700 "$SEG"
refused "d: a folder" "not a file pincache can open"

# --- e: symbolic links ----------------------------------------------------
cp "$SIM_TMP/valid.seg" "$SIM_TMP/target" && chmod 600 "$SIM_TMP/target"
ln -s "$SIM_TMP/target" "$SEG"
refused "e: a link to a valid file" "a symbolic link"
cmp -s "$SIM_TMP/valid.seg" "$SIM_TMP/target"
tap_check $? "e: the link's target is untouched"
ln -s "$SIM_TMP/nowhere" "$SEG"
refused "e: a dangling link" "a symbolic link"
[ ! -e "$SIM_TMP/nowhere" ]
tap_check $? "e: the dangling link's target was not created"

# --- f: fork --------------------------------------------------------------
# A parent with a sleeping child (it holds the parent's descriptor unless it
# closed it) is killed; the rank beside it must see it gone at once.
rm -f "$SIM_TMP/killed"
PINCACHE_REPORT=$SIM_TMP/fc.json run_prog shim "$R" -s $SIZE -m "$SIM_TMP/fc.on" -u "$SIM_TMP/killed" -t 400 \
	>"$SIM_TMP/fc.out" 2>"$SIM_TMP/fc.err" &
cpid=$!
wait_for "$SIM_TMP/fc.on"
shim_bg "$R" -s $SIZE -f sleep -m "$SIM_TMP/fp.on" -u "$SIM_TMP/never"
ppid=$!
wait_for "$SIM_TMP/fp.on"
sleep 0.3
kill -9 $ppid
wait $ppid 2>/dev/null
touch "$SIM_TMP/killed"
wait $cpid
same_as_plain "$SIM_TMP/fc.out" "f: the rank beside a killed parent"
check_stat "$SIM_TMP/fc.json" node_share_changes -ge 2 "f: the parent's share counted, then given back"
check_stat "$SIM_TMP/fc.json" node_threads -eq "$BUDGET" "f: the killed parent's sleeping child holds no share"
child=$(cat "$SIM_TMP/fp.on")
[ -n "$child" ] && kill -9 "$child" 2>/dev/null   # the orphaned child, asleep
no_file "f: after the parent was killed"

# A child that exits normally (its destructors run) while its parent stages
# on: the parent stays a member, and a new rank counts it.
PINCACHE_REPORT=$SIM_TMP/fe.json run_prog shim "$R" -s $SIZE -f exit -m "$SIM_TMP/fe.on" -w "$SIM_TMP/fe.go" \
	>"$SIM_TMP/fe.out" 2>"$SIM_TMP/fe.err" &
fpid=$!
wait_for "$SIM_TMP/fe.on"
PINCACHE_REPORT=$SIM_TMP/fq.json run_prog shim "$R" -s $SIZE >"$SIM_TMP/fq.out" 2>"$SIM_TMP/fq.err"
touch "$SIM_TMP/fe.go"
wait $fpid
same_as_plain "$SIM_TMP/fe.out" "f: the parent whose child exited"
same_as_plain "$SIM_TMP/fq.out" "f: the rank started after the child exited"
check_stat "$SIM_TMP/fq.json" node_ranks -eq 2 "f: it counts the parent (the child left its membership alone)"
no_file "f: after the parent and the new rank"

# --- g: off ---------------------------------------------------------------
PINCACHE_NODE_SHARE=off PINCACHE_LOG=info PINCACHE_REPORT=$SIM_TMP/off.json run_prog shim "$R" -s $SIZE \
	-m "$SIM_TMP/off.on" -w "$SIM_TMP/off.go" >"$SIM_TMP/off.out" 2>"$SIM_TMP/off.err" &
opid=$!
wait_for "$SIM_TMP/off.on"
no_file "g: off, while a rank stages"
touch "$SIM_TMP/off.go"
wait $opid
same_as_plain "$SIM_TMP/off.out" "g: off"
check_stat "$SIM_TMP/off.json" node_threads_peak -eq 0 "g: off: no share"
check_stat "$SIM_TMP/off.json" node_unavailable -eq 0 "g: off: no file looked for"
unset PINCACHE_STAGE_THREADS
want=$((cpus / 2)); [ "$want" -lt 1 ] && want=1; [ "$want" -gt 8 ] && want=8
PINCACHE_NODE_SHARE=off LOCAL_WORLD_SIZE=2 PINCACHE_LOG=info run_prog shim "$R" -s $SIZE -n 1 \
	>"$SIM_TMP/off2.out" 2>"$SIM_TMP/off2.err"
grep -q "staging with $want copy threads ($cpus CPUs, 2 processes on this node)" "$SIM_TMP/off2.err"
tap_check $? "g: off: LOCAL_WORLD_SIZE=2 divides the CPUs as before ($want copy threads)"
# A lone rank's share (16 of 32 pretended CPUs) above the cap of 8 per
# process (share.c) is not a change each time the ranks are counted again.
PINCACHE_TEST_CPUS=32 PINCACHE_REPORT=$SIM_TMP/cap.json run_prog shim "$R" -s $SIZE -n 200 \
	>"$SIM_TMP/cap.out" 2>"$SIM_TMP/cap.err"
check_stat "$SIM_TMP/cap.json" node_threads_peak -eq 8 "g: 32 CPUs, alone: 8 copy threads"
check_stat "$SIM_TMP/cap.json" node_share_changes -eq 0 "g: 32 CPUs, alone: the share never changed"
PINCACHE_STAGE_THREADS=$BUDGET
export PINCACHE_STAGE_THREADS

# --- h: bad values --------------------------------------------------------
PINCACHE_NODE_SHARE=maybe PINCACHE_REPORT=$SIM_TMP/h1.json run_prog shim "$R" -s $SIZE \
	>"$SIM_TMP/h1.out" 2>"$SIM_TMP/h1.err"
same_as_plain "$SIM_TMP/h1.out" "h: PINCACHE_NODE_SHARE=maybe"
n=$(grep -c "warning: environment option PINCACHE_NODE_SHARE has an invalid value 'maybe'; using the default on" "$SIM_TMP/h1.err")
[ "$n" = 1 ] && [ "$(wc -l <"$SIM_TMP/h1.err")" = 1 ]
tap_check $? "h: PINCACHE_NODE_SHARE=maybe: one warning, nothing else (got $n)"
check_stat "$SIM_TMP/h1.json" node_threads -eq "$BUDGET" "h: PINCACHE_NODE_SHARE=maybe: on, the default"
no_file "h: after PINCACHE_NODE_SHARE=maybe"
# A relative folder: the default (/dev/shm, whatever this machine has there).
PINCACHE_NODE_SHARE_DIR=relative/shm PINCACHE_REPORT=$SIM_TMP/h2.json run_prog shim "$R" -s $SIZE \
	>"$SIM_TMP/h2.out" 2>"$SIM_TMP/h2.err"
same_as_plain "$SIM_TMP/h2.out" "h: PINCACHE_NODE_SHARE_DIR=relative/shm"
n=$(grep -c "warning: environment option PINCACHE_NODE_SHARE_DIR has an invalid value 'relative/shm'; using the default /dev/shm" "$SIM_TMP/h2.err")
[ "$n" = 1 ]
tap_check $? "h: PINCACHE_NODE_SHARE_DIR=relative/shm: one warning (got $n)"
[ ! -e relative ]
tap_check $? "h: nothing made under the relative folder"
PINCACHE_VERBOSE=1 PINCACHE_NODE_SHARE_DIR=relative/shm PINCACHE_NODE_SHARE=2 run_prog shim "$R" -s $SIZE -n 1 \
	>/dev/null 2>"$SIM_TMP/h3.err"
grep -q "^pincache\[[0-9]*\]:   PINCACHE_NODE_SHARE_DIR=/dev/shm (default)\$" "$SIM_TMP/h3.err" &&
	grep -q "^pincache\[[0-9]*\]:   PINCACHE_NODE_SHARE=1 (default)\$" "$SIM_TMP/h3.err"
tap_check $? "h: PINCACHE_VERBOSE shows the defaults in use"
# --- i: a program that closes our descriptor and opens a file of its own in
# its place: pincache's exit neither unlocks, locks nor closes that file, so
# the line the program left in stdio's buffer reaches it at exit.
PINCACHE_REPORT=off run_prog shim "$R" -s $SIZE -n 2 -c "$SIM_TMP/taken.txt" >"$SIM_TMP/i.out" 2>"$SIM_TMP/i.err"
rc=$?
sed 's/^/# stderr: /' "$SIM_TMP/i.err"
[ $rc = 0 ] && grep -q "^taken [0-9]* of 1 closed\$" "$SIM_TMP/taken.txt"
tap_check $? "i: the program's own file under our old descriptor keeps its line ($(cat "$SIM_TMP/taken.txt" 2>/dev/null), exit $rc)"
# Its name stays (our locks went only with the process): the next process
# takes the file over and removes it at its exit.
PINCACHE_REPORT=off run_prog shim "$R" -s $SIZE -n 1 >/dev/null 2>&1
no_file "i: after the program closed our descriptor, and the next process"
tap_done
