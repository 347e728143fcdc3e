#!/usr/bin/env bash
# coldalloc.sh BUILDDIR OUTDIR - issue 18's benchmark, side by side in one
# run: cold pinned allocations plainly and under pincache, the copy rates of
# pincache's blocks against cudaHostAlloc's, and varsize before and after.
#
#   1. coldalloc alloc SIZE REPS, one process each plainly, under pincache
#      (PINCACHE_FAST_ALLOC=on) and with the fast path off, interleaved in
#      COLDALLOC_ROUNDS rounds (default 2); the sizes, their REPS and the
#      speed-up each must reach: COLDALLOC_SIZES (default "64M:5:4 1G:3:5"),
#      then COLDALLOC_BIG ("4G:1:-": no target; left out when MemAvailable
#      is under 4 times its size, or when empty).  Every call of every round
#      pooled: median, min, max.
#   2. coldalloc rates, plain and pincache alternately, COLDALLOC_RATE_ROUNDS
#      (3) processes each, COLDALLOC_RATE_REPS (15) samples per size
#      (COLDALLOC_RATE_SIZES, default 64K..1G); each figure the median of the
#      processes' medians.  Each size in a process of its own, so that its
#      block is the first the process allocates plainly and under pincache
#      alike: run one after the other, the cache keeps the smaller blocks the
#      plain run frees, and where the driver then carves the next one moves
#      its rate by up to 2.4% (H100 run 91, dev/probe/place.cu).
#      Device-timed rates must be within 2%: the blocks' DMA; host-timed ones
#      (sync cudaMemcpy) are shown, pincache's per-call work included.
#   3. varsize (as make bench runs it, COLDALLOC_VARSIZE: its arguments, or
#      "off") under pincache with the fast path off ("before") and on, in
#      COLDALLOC_VARSIZE_ROUNDS (3) rounds, the order reversed every other
#      round: the speed-up of the medians (>= 2; one process of each, as
#      until 2026-12-05, moved from 1.6x to 2.3x between runs of one
#      machine), and held_bytes_peak / peak request (<= 1.15) in every run.
#
# A markdown report on stdout: tables, one "PASS: " or "FAIL: " line per
# criterion of issue 18's "Done means", the counters of every pincache run's
# JSON report, the wall time.  Progress on stderr.  OUTDIR keeps each run's
# output (NAME.out, NAME.err), pincache's reports (NAME.json), config.txt and
# machine.txt; COLDALLOC_REPORT_ONLY=1 measures nothing and renders OUTDIR
# again.  Exit status: 0 when every criterion passes, 1 otherwise; 0 with
# "no CUDA device" where there is none.
set -u
unset LD_PRELOAD # plain runs must be plain

srcdir=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=tests/bench/args.sh
. "$srcdir/tests/bench/args.sh"
bin=$builddir/tests/bench
prog=$bin/coldalloc
report_only=${COLDALLOC_REPORT_ONLY:-0}
failed=0

# bytes SIZE: SIZE (K/M/G: powers of 1024) in bytes
bytes() {
    awk -v s="$1" 'BEGIN { n = s + 0; u = substr(s, length(s));
        printf "%.0f\n", n * (u == "K" ? 1024 : u == "M" ? 1048576 : u == "G" ? 1073741824 : 1) }'
}

if [ "$report_only" = 1 ]; then
    [ -f "$out/config.txt" ] || { echo "coldalloc.sh: no $out/config.txt to render" >&2; exit 2; }
    # shellcheck source=/dev/null
    . "$out/config.txt"
else
    sizes=${COLDALLOC_SIZES:-64M:5:4 1G:3:5}
    big=${COLDALLOC_BIG-4G:1:-}
    if [ -n "$big" ]; then
        avail=$(awk '/^MemAvailable:/ { printf "%.0f\n", $2 * 1024 }' /proc/meminfo 2>/dev/null)
        if awk -v a="${avail:-0}" -v b="$(bytes "${big%%:*}")" 'BEGIN { exit !(a >= 4 * b) }'; then
            sizes="$sizes $big"
        else
            echo "coldalloc.sh: ${big%%:*} left out: MemAvailable ${avail:-unknown} bytes" >&2
        fi
    fi
    rounds=${COLDALLOC_ROUNDS:-2}
    rate_sizes=${COLDALLOC_RATE_SIZES:-64K 256K 1M 4M 16M 64M 256M 1G}
    rate_rounds=${COLDALLOC_RATE_ROUNDS:-3}
    rate_reps=${COLDALLOC_RATE_REPS:-15}
    varsize=${COLDALLOC_VARSIZE:---ops 20000 --max-live 48}
    varsize_rounds=${COLDALLOC_VARSIZE_ROUNDS:-3}
    {
        echo "sizes='$sizes'"
        echo "rounds='$rounds'"
        echo "rate_sizes='$rate_sizes'"
        echo "rate_rounds='$rate_rounds'"
        echo "rate_reps='$rate_reps'"
        echo "varsize='$varsize'"
        echo "varsize_rounds='$varsize_rounds'"
    } >"$out/config.txt"

    t0=$(date +%s)
    # shellcheck source=tests/gpu/cuda-env.sh
    . "$srcdir/tests/gpu/cuda-env.sh"
    pc_find_nvcc || { echo "coldalloc.sh: no nvcc; nothing measured"; exit 0; }
    [ -f "$lib" ] || { echo "coldalloc.sh: $lib not found (build pincache first)" >&2; exit 2; }
    mkdir -p "$bin" || exit 2
    pc_build "$prog" "$srcdir/tests/bench/coldalloc.cu" >"$out/build-coldalloc.log" 2>&1 &
    p1=$!
    pc_build "$bin/varsize" "$srcdir/tests/bench/varsize.cu" >"$out/build-varsize.log" 2>&1 &
    p2=$!
    wait $p1 || { echo "coldalloc.sh: building coldalloc failed:" >&2; cat "$out/build-coldalloc.log" >&2; exit 2; }
    wait $p2 || { echo "coldalloc.sh: building varsize failed:" >&2; cat "$out/build-varsize.log" >&2; exit 2; }
    timeout -k 5 60 "$prog" probe >"$out/probe.out" 2>&1
    case $? in
    0) ;;
    3) echo "coldalloc.sh: no CUDA device; nothing measured"; exit 0 ;;
    *) echo "coldalloc.sh: the probe failed:" >&2; cat "$out/probe.out" >&2; exit 2 ;;
    esac
    {
        echo "date=$(date -u '+%Y-%m-%d %H:%M UTC')"
        echo "gpu=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -n 1)"
        echo "host=$(nproc) CPUs, Linux $(uname -r), MemAvailable ${avail:-?} bytes"
        echo "command=$cmdline"
    } >"$out/machine.txt"
fi

# run NAME plain|on|off PROG ARGS...: stdout in NAME.out, stderr in NAME.err;
# on and off: under pincache with PINCACHE_FAST_ALLOC so, its report in NAME.json
run() {
    local name=$1 how=$2 rc
    shift 2
    local env=()
    [ "$how" = plain ] || env=(LD_PRELOAD="$lib" PINCACHE_MODE=cache PINCACHE_FAST_ALLOC="$how"
                               PINCACHE_REPORT="$out/$name.json")
    echo "coldalloc.sh: $name" >&2
    rm -f "$out/$name.json"
    timeout -k 5 120 env "${env[@]}" "$@" >"$out/$name.out" 2>"$out/$name.err"
    rc=$?
    if [ "$rc" != 0 ]; then
        echo "coldalloc.sh: $name failed (exit $rc); see $out/$name.err" >&2
        failed=$((failed + 1))
    fi
}

if [ "$report_only" != 1 ]; then
    # an earlier run's files would be pooled with this one's
    rm -f "$out"/alloc.*.* "$out"/rates.*.* "$out"/varsize.*.*
    # plain and pincache in turn, the order reversed every other round
    for r in $(seq "$rounds"); do
        order="plain on off"
        [ $((r % 2)) = 0 ] && order="off on plain"
        for s in $sizes; do
            IFS=: read -r size reps _ <<<"$s"
            [ "$r" -gt 1 ] && [ " $s" = " $big" ] && continue # the big size once
            for how in $order; do
                run "alloc.$size.$how.$r" "$how" "$prog" alloc "$size" "$reps"
            done
        done
    done
    for r in $(seq "$rate_rounds"); do
        for size in $rate_sizes; do
            for how in plain on; do
                run "rates.$how.$r.$size" "$how" "$prog" rates "$rate_reps" "$size"
            done
        done
    done
    if [ "$varsize" != off ]; then
        for r in $(seq "$varsize_rounds"); do
            order="off on"
            [ $((r % 2)) = 0 ] && order="on off"
            for how in $order; do
                # shellcheck disable=SC2086
                run "varsize.$how.$r" "$how" "$bin/varsize" $varsize
            done
        done
    fi
    echo "wall=$(($(date +%s) - t0))" >>"$out/machine.txt"
fi

# ---- figures from the logs
# med: the median of the numbers on stdin ("" when none)
med() {
    sort -g | awk '{ v[NR] = $1 } END { if (NR) printf "%.6g\n", NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
# calls OP SIZE HOW: every timed OP (alloc, free) of SIZE in the HOW runs, one a line
calls() {
    cat "$out/alloc.$2.$3".*.out 2>/dev/null | sed -n "s/^COLDALLOC $1 .* ms=\([0-9.,]*\).*/\1/p" | tr ',' '\n'
}
# spread OP SIZE HOW: "median (min-max, count)" of calls
spread() {
    calls "$@" | sort -g | awk '{ v[NR] = $1 } END {
        if (!NR) { print "(no figure)"; exit }
        m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
        printf "%.2f (%.2f-%.2f, %d)\n", m, v[1], v[NR], NR }'
}
# rate HOW SIZE DIR TIMING: the median over the HOW rate runs of their medians
rate() {
    cat "$out/rates.$1".*.out 2>/dev/null |
        sed -n "s/^COLDALLOC rate size=$(bytes "$2") dir=$3 timing=$4 .*median_gbps=\([0-9.]*\).*/\1/p" | med
}
# field NAME KEY: KEY=value from NAME.out's RESULT line
field() {
    sed -n "s/^RESULT .* $2=\([^ ]*\).*/\1/p" "$out/$1.out" 2>/dev/null | head -n 1
}
# jstat NAME KEY: KEY of the "stats" object in NAME.json ("-" when absent)
jstat() {
    local v
    v=$(sed -n '/"stats": *{/,/}/s/^ *"'"$2"'": *\([0-9.eE+-]*\).*/\1/p' "$out/$1.json" 2>/dev/null | head -n 1)
    echo "${v:--}"
}
# shown V DIGITS: V rounded for a table, or "(no figure)"
shown() {
    awk -v v="${1:-}" -v d="$2" 'BEGIN { if (v == "") print "(no figure)"; else printf "%.*f\n", d, v }'
}
# ratio A B [DIGITS]: A/B, or "" when either is missing
ratio() {
    awk -v a="${1:-}" -v b="${2:-}" -v d="${3:-2}" 'BEGIN {
        if (a == "" || b == "" || a == "-" || b == "-" || b + 0 == 0) print ""; else printf "%.*f\n", d, a / b }'
}
# varsize_runs HOW: the names of the varsize runs of HOW (one a line; the
# unnumbered name of the single run before 2026-12-05's rounds too)
varsize_runs() {
    local f
    for f in "$out/varsize.$1.out" "$out/varsize.$1".[0-9]*.out; do
        [ -f "$f" ] && basename "$f" .out
    done
}
# varsize_seconds HOW: the median of its runs' seconds ("" when none)
varsize_seconds() {
    local n
    for n in $(varsize_runs "$1"); do
        field "$n" seconds
    done | med
}
pass=0 fail=0
# verdict OK TEXT: one criterion's line
verdict() {
    if [ "$1" = 1 ]; then
        echo "PASS: $2"
        pass=$((pass + 1))
    else
        echo "FAIL: $2"
        fail=$((fail + 1))
    fi
}
# at_least V MIN / at_most V MAX: 1 when V is a number and holds, else 0
at_least() { awk -v v="${1:-}" -v m="$2" 'BEGIN { print (v != "" && v + 0 >= m) ? 1 : 0 }'; }
at_most() { awk -v v="${1:-}" -v m="$2" 'BEGIN { print (v != "" && v + 0 <= m) ? 1 : 0 }'; }
human() {
    awk -v n="$(bytes "$1")" 'BEGIN { if (n >= 1073741824) printf "%g GiB\n", n / 1073741824;
        else if (n >= 1048576) printf "%g MiB\n", n / 1048576; else printf "%g KiB\n", n / 1024 }'
}
m() { sed -n "s/^$1=//p" "$out/machine.txt" 2>/dev/null | head -n 1; }

echo "## Cold pinned allocations (issue 18)"
echo
echo "- date: $(m date); GPU, driver: $(m gpu); host: $(m host)"
echo "- pincache: $lib"
echo "- command: \`$(m command)\`"
[ "$report_only" = 1 ] && echo "- rendered again from $out: \`$cmdline\` with COLDALLOC_REPORT_ONLY=1"
echo
echo "### cudaHostAlloc, cold (ms per call: median (min-max, calls) over $rounds rounds of one process each)"
echo
echo "| size | plain | pincache | plain/pincache | target | pincache, fast path off | plain free | pincache free |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|"
verdicts=()
for s in $sizes; do
    IFS=: read -r size _ target <<<"$s"
    x=$(ratio "$(calls alloc "$size" plain | med)" "$(calls alloc "$size" on | med)" 4)
    echo "| $(human "$size") | $(spread alloc "$size" plain) | $(spread alloc "$size" on) | $(shown "$x" 2)x |" \
         "$([ "$target" = - ] && echo none || echo ">= ${target}x") | $(spread alloc "$size" off) | $(spread free "$size" plain) |" \
         "$(spread free "$size" on) |"
    [ "$target" = - ] ||
        verdicts+=("$(at_least "$x" "$target")|cold $(human "$size"): plain/pincache $(shown "$x" 3)x, target >= ${target}x")
done
echo
echo "### Copy rates from the blocks (GB/s; each the median of $rate_rounds processes' medians of $rate_reps)"
echo
echo "| size | dir | plain, device-timed | pincache | pincache/plain | plain, host-timed | pincache | pincache/plain |"
echo "|---|---|---:|---:|---:|---:|---:|---:|"
bad_rates="" n_rates=0
for size in $rate_sizes; do
    for dir in h2d d2h; do
        pd=$(rate plain "$size" "$dir" dev)
        fd=$(rate on "$size" "$dir" dev)
        ph=$(rate plain "$size" "$dir" host)
        fh=$(rate on "$size" "$dir" host)
        rd=$(ratio "$fd" "$pd" 5)
        echo "| $(human "$size") | $dir | $(shown "$pd" 2) | $(shown "$fd" 2) | $(shown "$rd" 3) |" \
             "$(shown "$ph" 2) | $(shown "$fh" 2) | $(shown "$(ratio "$fh" "$ph" 5)" 3) |"
        n_rates=$((n_rates + 1))
        [ "$(at_least "$rd" 0.98)$(at_most "$rd" 1.02)" = 11 ] || bad_rates="$bad_rates $(human "$size") $dir $(shown "$rd" 3);"
    done
done
if [ -z "$bad_rates" ]; then
    verdicts+=("1|every device-timed rate from a pincache block within 2% of plain ($n_rates of $n_rates)")
else
    verdicts+=("0|device-timed rates from pincache blocks outside 2% of plain (pincache/plain):${bad_rates%;}")
fi
echo
if [ "$varsize" != off ]; then
    echo "### varsize (\`varsize $varsize\`), under pincache, fast path off (before) and on"
    echo
    echo "| fast path | run | seconds | held_bytes_peak / peak request | real_alloc_calls | fast_alloc_calls |"
    echo "|---|---|---:|---:|---:|---:|"
    held='' missing=0
    for how in off on; do
        for n in $(varsize_runs "$how"); do
            h=$(ratio "$(jstat "$n" held_bytes_peak)" "$(field "$n" peak_live_requested_bytes)" 5)
            echo "| $how | $n | $(field "$n" seconds) | $(shown "$h" 3) | $(jstat "$n" real_alloc_calls) |" \
                 "$(jstat "$n" fast_alloc_calls) |"
            # held/peak must hold in every run of the fast path: the worst
            if [ "$how" = on ] && [ -n "$h" ]; then
                held="$held $h"
            elif [ "$how" = on ]; then
                missing=1
            fi
        done
    done
    off_s=$(varsize_seconds off)
    on_s=$(varsize_seconds on)
    x=$(ratio "$off_s" "$on_s" 4)
    worst=
    # shellcheck disable=SC2086 # one held/peak a word
    [ "$missing" = 0 ] && worst=$(printf '%s\n' $held | sort -g | tail -n 1)
    echo
    echo "Median seconds: fast path off $(shown "$off_s" 3), on $(shown "$on_s" 3)."
    verdicts+=("$(at_least "$x" 2)|varsize before/after (medians) $(shown "$x" 3)x, target >= 2x")
    verdicts+=("$(at_most "$worst" 1.15)|varsize held/peak with the fast path, worst run $(shown "$worst" 3), target <= 1.15")
    echo
fi
echo "### Verdicts (issue 18, \"Done means\")"
echo
for v in "${verdicts[@]}"; do
    verdict "${v%%|*}" "${v#*|}"
done
echo
echo "### pincache's counters (stats in each run's JSON report)"
echo
echo "| run | fast_alloc_calls | fast_alloc_fallbacks | fast_alloc_saved_ns | real_alloc_calls | alloc_misses |"
echo "|---|---:|---:|---:|---:|---:|"
for j in "$out"/*.json; do
    [ -f "$j" ] || continue
    n=$(basename "$j" .json)
    echo "| $n | $(jstat "$n" fast_alloc_calls) | $(jstat "$n" fast_alloc_fallbacks) | $(jstat "$n" fast_alloc_saved_ns) |" \
         "$(jstat "$n" real_alloc_calls) | $(jstat "$n" alloc_misses) |"
done
echo
echo "Runs and reports: $out. Wall time (build and measurements): $(m wall) s."
if [ "$failed" -gt 0 ]; then
    echo
    echo "**$failed run(s) failed; see their .err files.**"
fi
echo
echo "coldalloc: $pass passed, $fail failed"
[ "$fail" = 0 ] && [ "$failed" = 0 ]
