#!/usr/bin/env bash
# h200-stageprobe.sh LIB OUTDIR [SETTING...] - the seeds' pageable variants
# (dev/stageprobe.py) plainly, then under LIB (libpincache.so) with
# each SETTING ("" = the defaults; "A=1 B=2" = several variables), then
# plainly again; one line per run, and each shimmed run's report in OUTDIR.
# On the GPU machine, e.g.
#   dev/h200-stageprobe.sh BUILD/src/.libs/libpincache.so "$OUT" "" \
#       PINCACHE_STAGE_PIECES=8 PINCACHE_STAGE_NT=off PINCACHE_STAGE_LINGER=0
set -u
lib=$1 out=$2
shift 2
py=$(dirname "$0")/stageprobe.py
mkdir -p "$out"
line() { echo "[$1] $(shift; "$@" 2>&1 | tail -1)"; }
line plain timeout 60 python3 "$py"
for v in "$@"; do
    n=$(echo "${v:-default}" | tr ' =' '__')
    # shellcheck disable=SC2086 # a setting may hold several variables
    line "${v:-default}" env $v PINCACHE_REPORT="$out/stageprobe.$n.json" LD_PRELOAD="$lib" timeout 60 python3 "$py"
done
line plain timeout 60 python3 "$py"
