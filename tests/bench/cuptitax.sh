#!/usr/bin/env bash
# cuptitax.sh BUILDDIR OUTDIR - issue 19's "CUPTI cheap enough to leave on",
# side by side in one run: the churn benchmark (tests/bench/churn.cu, the
# per-batch cudaHostAlloc program pincache serves) and a PyTorch training
# step (tests/torch/train.py, DataLoader with pin_memory), each under
# pincache with PINCACHE_CUPTI=off and with PINCACHE_CUPTI=auto.
#
#   CUPTITAX_ROUNDS  processes of each, off and auto alternating, the order
#                    reversed every other round (default 3)
#   CUPTITAX_SIZES   churn sizes in MB (default "1 8")
#   CUPTITAX_TRAIN   train.py's options (default "--pin 1 --epochs 2
#                    --steps 150"); "off": no training runs
#   CUPTITAX_KINDS   which parts of CUPTI's cost to measure apart on the
#                    churn and on the training step (default "none kernels
#                    copies"; "off": none): PINCACHE_CUPTI=auto with
#                    PINCACHE_TEST_CUPTI_KINDS set to each, in the same
#                    rounds; a second table, no verdict (none: CUPTI loaded
#                    and its buffers registered, nothing recorded)
#   PYTHON           the interpreter for train.py (default python3)
#
# A markdown report on stdout: per workload the figure with CUPTI off and
# auto (each the median of the rounds' figures: churn ms per batch, train
# median step ms) and auto/off, one "PASS: "/"FAIL: " line per workload
# (auto at most CUPTITAX_MAX, default 1.02, times off), and one that every
# auto run had CUPTI enabled (cupti_enabled in its report: else the
# comparison measured nothing).  Progress on stderr; runs and reports in
# OUTDIR.  CUPTITAX_REPORT_ONLY=1 renders OUTDIR again.  Exit status 0 when
# every criterion passes, 1 otherwise; 0 with "no CUDA device".
set -u
unset LD_PRELOAD PINCACHE_CUPTI PINCACHE_MODE

srcdir=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=tests/bench/args.sh
. "$srcdir/tests/bench/args.sh"
bin=$builddir/tests/bench
max=${CUPTITAX_MAX:-1.02}
# shellcheck source=tests/bench/benchlib.sh
. "$srcdir/tests/bench/benchlib.sh"

if [ "${CUPTITAX_REPORT_ONLY:-0}" = 1 ]; then
    # shellcheck source=/dev/null
    . "$out/config.txt" || exit 2
else
    rounds=${CUPTITAX_ROUNDS:-3}
    sizes=${CUPTITAX_SIZES:-1 8}
    train=${CUPTITAX_TRAIN:---pin 1 --epochs 2 --steps 150}
    py=${PYTHON:-python3}
    "$py" -c 'import torch' 2>/dev/null || train=off
    kinds=${CUPTITAX_KINDS:-none kernels copies}
    [ "$kinds" = off ] && kinds=
    printf "rounds='%s'\nsizes='%s'\ntrain='%s'\nkinds='%s'\n" "$rounds" "$sizes" "$train" "$kinds" >"$out/config.txt"
    bench_build churn
    nvidia-smi -L >/dev/null 2>&1 || { echo "cuptitax.sh: no CUDA device; nothing measured"; exit 0; }
    bench_machine
    rm -f "$out"/churn*.* "$out"/train.*
    t0=$(date +%s)
    for r in $(seq "$rounds"); do
        order="off auto"
        [ $((r % 2)) = 0 ] && order="auto off"
        for how in $order; do
            env=(LD_PRELOAD="$lib" PINCACHE_CUPTI="$how")
            for mb in $sizes; do
                bench_run "churn$mb.$how.$r" 200 "${env[@]}" PINCACHE_REPORT="$out/churn$mb.$how.$r.json" -- \
                    "$bin/churn" --variant churn --size "$mb" --reps 5
            done
            # shellcheck disable=SC2086
            [ "$train" = off ] || bench_run "train.$how.$r" 300 "${env[@]}" PINCACHE_REPORT="$out/train.$how.$r.json" -- \
                "$py" "$srcdir/tests/torch/train.py" $train
        done
        for k in $kinds; do
            for mb in $sizes; do
                bench_run "churn$mb.k$k.$r" 200 LD_PRELOAD="$lib" PINCACHE_CUPTI=auto PINCACHE_TEST_CUPTI_KINDS="$k" \
                    PINCACHE_REPORT="$out/churn$mb.k$k.$r.json" -- "$bin/churn" --variant churn --size "$mb" --reps 5
            done
            # shellcheck disable=SC2086
            [ "$train" = off ] || bench_run "train.k$k.$r" 300 LD_PRELOAD="$lib" PINCACHE_CUPTI=auto \
                PINCACHE_TEST_CUPTI_KINDS="$k" PINCACHE_REPORT="$out/train.k$k.$r.json" -- \
                "$py" "$srcdir/tests/torch/train.py" $train
        done
    done
    echo "wall=$(($(date +%s) - t0))" >>"$out/machine.txt"
fi

# fig NAME HOW KEY: the median over NAME's HOW runs of KEY in their RESULT lines
fig() {
    for f in "$out/$1.$2".*.out; do
        [ -f "$f" ] && sed -n "s/^RESULT .*$3=\([0-9.]*\).*/\1/p" "$f" | tail -n 1
    done | med
}

echo "## CUPTI on and off under pincache (issue 19)"
echo
echo "- date: $(m date); GPU, driver: $(m gpu); host: $(m host); wall $(m wall) s"
echo "- command: \`$(m command)\`; $rounds processes of each, alternating"
echo
echo "| workload | PINCACHE_CUPTI=off | auto | auto/off |"
echo "|---|---:|---:|---:|"
rows=() verdicts=()
for mb in $sizes; do
    rows+=("churn$mb|churn, $mb MB (ms per batch)|ms_per_batch")
done
[ "$train" = off ] || rows+=("train|train.py $train (median step ms)|step_ms")
for row in "${rows[@]}"; do
    IFS='|' read -r name what key <<<"$row"
    a=$(fig "$name" off "$key")
    b=$(fig "$name" auto "$key")
    x=$(ratio "$b" "$a")
    echo "| $what | ${a:-?} | ${b:-?} | ${x:-?} |"
    verdicts+=("$(within "$x" "$max")|$what: auto/off ${x:-?}, at most $max")
done
echo
if [ -n "${kinds:-}" ]; then
    echo "What each part of CUPTI costs (PINCACHE_CUPTI=auto with PINCACHE_TEST_CUPTI_KINDS; each"
    echo "/off). No verdict: where auto costs too much, this says why."
    echo
    hdr="| workload | off |" sep="|---|---:|"
    for k in $kinds; do hdr="$hdr $k |"; sep="$sep---:|"; done
    echo "$hdr all (auto) |"
    echo "$sep---:|"
    for row in "${rows[@]}"; do
        IFS='|' read -r name what key <<<"$row"
        a=$(fig "$name" off "$key")
        line="| $what | ${a:-?} |"
        for k in $kinds; do
            b=$(fig "$name" "k$k" "$key")
            line="$line ${b:-?} ($(ratio "$b" "$a")) |"
        done
        b=$(fig "$name" auto "$key")
        echo "$line ${b:-?} ($(ratio "$b" "$a")) |"
    done
    echo
fi
for v in "${verdicts[@]}"; do
    verdict "${v%%|*}" "${v#*|}"
done
# every auto run's report: CUPTI enabled (or handed over to a profiler)
n=0 on=0
for f in "$out"/*.auto.*.json; do
    [ -f "$f" ] || continue
    n=$((n + 1))
    grep -q '"cupti_enabled": *1' "$f" && on=$((on + 1))
done
verdict "$([ "$n" -gt 0 ] && [ "$on" = "$n" ] && echo 1 || echo 0)" "CUPTI enabled in every auto run ($on of $n reports)"
echo
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
