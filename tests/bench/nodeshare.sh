#!/usr/bin/env bash
# nodeshare.sh BUILDDIR OUTDIR - issue 19's benchmark, "a node's ranks share
# the copy engine": processes started together, each copying its pageable
# rows to the same GPU (nodeshare.cu: cudaMemcpyAsync + cudaStreamSynchronize
# per row, as a pageable .cuda() does), plainly, under pincache with the
# node's share (PINCACHE_NODE_SHARE=on, the default) and without it (off),
# in one run.
#
#   NODESHARE_PROCS   process counts to run (default "1 4")
#   NODESHARE_TRIALS  trials of each count and configuration, the order of the
#                     configurations turned every trial (default 3)
#   NODESHARE_ROWS, NODESHARE_ROW   rows per process and bytes per row
#                     (default 256 of 2.5 MiB: 640 MiB a process)
#   NODESHARE_TARGET  GB/s the largest count must reach together under
#                     pincache with the share (default 40)
#
# A trial's aggregate is all its processes' bytes over (the last end - the
# first start), each process's clock started when the start file appeared
# (every process has copied one row first: the context, pincache's ring and
# threads).  A markdown report on stdout: per count and configuration the
# median aggregate GB/s (min-max), the median slowest process, the ratio to
# plain, and the copy threads each pincache process had at its last copy
# (node_threads, from its JSON report); then one PASS or FAIL line.  OUTDIR
# keeps every process's output and report.  Progress on stderr.  Exit
# status: 0 when the target is met (or nothing could be measured: no nvcc,
# no CUDA device), 1 when it is not or a run failed, 2 on a usage error.
# PINCACHE_NODE_SHARE_DIR is passed on as set (default /dev/shm).
set -u
unset LD_PRELOAD # plain runs must be plain

srcdir=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=tests/bench/args.sh
. "$srcdir/tests/bench/args.sh"
# shellcheck source=tests/bench/benchlib.sh
. "$srcdir/tests/bench/benchlib.sh"
prog=$builddir/tests/bench/nodeshare
procs_list=${NODESHARE_PROCS:-1 4}
trials=${NODESHARE_TRIALS:-3}
rows=${NODESHARE_ROWS:-256}
row=${NODESHARE_ROW:-2621440}
target=${NODESHARE_TARGET:-40}
failed=0

bench_build nodeshare
bench_probe "$prog"
bench_machine

# trial NAME PROCS HOW: PROCS processes at once; HOW plain, on or off
trial() {
    local name=$1 procs=$2 how=$3 d=$out/$1 k i pids=() rc
    local env=()
    rm -rf "$d" && mkdir -p "$d/bar" || return 1
    echo "nodeshare.sh: $name" >&2
    for k in $(seq "$procs"); do
        [ "$how" = plain ] || env=(LD_PRELOAD="$lib" PINCACHE_NODE_SHARE="$how" PINCACHE_REPORT="$d/rank$k.json")
        timeout -k 5 300 env "${env[@]}" "$prog" run "$rows" "$row" "$d/bar" >"$d/rank$k.out" 2>"$d/rank$k.err" &
        pids+=($!)
    done
    # every process warmed up, then all start at once
    for i in $(seq 1800); do
        [ "$(find "$d/bar" -name 'ready.*' | wc -l)" -ge "$procs" ] && break
        kill -0 "${pids[@]}" 2>/dev/null || break
        sleep 0.1
    done
    touch "$d/bar/start"
    for k in "${!pids[@]}"; do
        wait "${pids[$k]}"
        rc=$?
        if [ "$rc" != 0 ]; then
            echo "nodeshare.sh: $name rank $((k + 1)) failed (exit $rc); see $d/rank$((k + 1)).err" >&2
            failed=$((failed + 1))
        fi
    done
}

t0=$(date +%s)
order=(plain on off)
for t in $(seq "$trials"); do
    for p in $procs_list; do
        for how in "${order[@]}"; do
            trial "p$p.$how.$t" "$p" "$how"
        done
    done
    order=("${order[1]}" "${order[2]}" "${order[0]}")
done
echo "wall=$(($(date +%s) - t0))" >>"$out/machine.txt"

# ---- figures
# agg NAME: "GBPS SLOWEST_MS" of one trial ("" when a process left no line)
agg() {
    cat "$out/$1"/rank*.out 2>/dev/null | awk -v want="$2" '
        /^NODESHARE / {
            for (i = 2; i <= NF; i++) { split($i, kv, "="); f[kv[1]] = kv[2] }
            if (f["ok"] != 1) bad = 1
            n++; bytes += f["bytes"]; s = f["start_ns"] + 0; e = f["end_ns"] + 0
            if (!first || s < first) first = s
            if (e > last) last = e
            if (e - s > slow) slow = e - s
        }
        END { if (n == want && !bad && last > first) printf "%.3f %.3f\n", bytes / (last - first), slow / 1e6 }'
}
# figures P HOW COL: column COL of agg over the trials, one a line
figures() {
    for t in $(seq "$trials"); do agg "p$1.$2.$t" "$1"; done | awk -v c="$3" 'NF { print $c }'
}
spread() {
    sort -g | awk '{ v[NR] = $1 } END {
        if (!NR) { print "(no figure)"; exit }
        m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
        printf "%.1f (%.1f-%.1f)\n", m, v[1], v[NR] }'
}
# threads P HOW: node_threads of each process of the last trial
threads() {
    local f v s=
    for f in "$out/p$1.$2.$trials"/rank*.json; do
        [ -f "$f" ] || continue
        v=$(sed -n 's/^ *"node_threads": *\([0-9]*\).*/\1/p' "$f" | head -n 1)
        s="$s${s:+ }${v:--}"
    done
    echo "${s:--}"
}

echo "## Processes of one node staging to one GPU at once (issue 19)"
echo
echo "- date: $(m date); GPU, driver, link: $(m gpu); host: $(m host); wall $(m wall) s"
echo "- each process: $rows pageable rows of $row bytes, cudaMemcpyAsync + cudaStreamSynchronize per row"
echo "- pincache: $lib; PINCACHE_NODE_SHARE_DIR=${PINCACHE_NODE_SHARE_DIR:-/dev/shm (default)}"
echo "- command: \`$(m command)\`"
echo
echo "| processes | configuration | together, GB/s: median (min-max) of $trials | slowest process, ms | vs plain | copy threads per process (node_threads) |"
echo "|---:|---|---:|---:|---:|---|"
verdict_gbps=
for p in $procs_list; do
    plain=$(figures "$p" plain 1 | med)
    for how in plain on off; do
        g=$(figures "$p" "$how" 1 | med)
        x=$(awk -v a="$g" -v b="$plain" 'BEGIN { if (a == "" || b == "" || b + 0 == 0) print "-"; else printf "%.2fx\n", a / b }')
        case $how in plain) what=plain ;; on) what="pincache, node share on" ;; *) what="pincache, node share off" ;; esac
        echo "| $p | $what | $(figures "$p" "$how" 1 | spread) | $(figures "$p" "$how" 2 | spread) | $x |" \
             "$([ "$how" = plain ] && echo - || threads "$p" "$how") |"
        [ "$how" = on ] && verdict_gbps=$g && verdict_p=$p
    done
done
echo
[ "$failed" = 0 ] || echo "$failed run(s) failed: see $out"
ok=$(awk -v v="${verdict_gbps:-}" -v t="$target" 'BEGIN { print (v != "" && v + 0 >= t) ? 1 : 0 }')
if [ "$ok" = 1 ] && [ "$failed" = 0 ]; then
    echo "PASS: $verdict_p processes under pincache (node share on) reach ${verdict_gbps} GB/s together, target >= $target"
    exit 0
fi
echo "FAIL: $verdict_p processes under pincache (node share on) reach ${verdict_gbps:-(no figure)} GB/s together, target >= $target"
exit 1
