# tap.sh - sourced (bash) by the folders' run-gpu.sh scripts after
# pc_gpu_start (tests/gpu/cuda-env.sh), which sets $out: their TAP points
# and their runs, written once.
#
#   ok TEXT, notok TEXT, skip TEXT    one point (n counts them)
#   check STATUS TEXT                 one point, ok when STATUS is 0
#   run NAME SECONDS [VAR=VALUE...] PROG ARGS
#                                     PROG's output in $out/NAME.out and
#                                     NAME.err, bounded in time; sets rc
#   jnum FILE DOTTED.PATH             one value of a JSON file (python3);
#                                     nothing when it is absent
# shellcheck shell=bash

n=0
ok() { n=$((n + 1)); echo "ok $n - $*"; }
notok() { n=$((n + 1)); echo "not ok $n - $*"; }
check() { local st=$1; shift; if [ "$st" = 0 ]; then ok "$@"; else notok "$@"; fi; }
skip() { n=$((n + 1)); echo "ok $n # SKIP $*"; }

run() {
    local name=$1 secs=$2
    shift 2
    # shellcheck disable=SC2154  # out: set by pc_gpu_start
    timeout -k 5 "$secs" env "$@" >"$out/$name.out" 2>"$out/$name.err"
    # shellcheck disable=SC2034  # rc: the caller reads it
    rc=$?
}

jnum() {
    python3 -c 'import json,sys
o=json.load(open(sys.argv[1]))
for k in sys.argv[2].split("."): o=o[k]
print(o)' "$1" "$2" 2>/dev/null
}
