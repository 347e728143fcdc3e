#!/usr/bin/env bash
# xover.sh BUILDDIR OUTDIR - issue 19's "never slower than the driver", side
# by side in one run: pageable copies plainly and under pincache (its
# defaults) at each size, H2D and D2H, from warm and from freshly mapped
# buffers (tests/bench/xover.cu), and the 1 MB pageable churn
# (tests/bench/churn.cu --variant pageable).
#
#   XOVER_SIZES   the copy sizes (default "64K 256K 1M 4M 16M 64M 256M")
#   XOVER_REPS    samples per point (default 40; a quarter at 256M and up,
#                 half at 64M and up)
#   XOVER_ROUNDS  processes of each kind, alternating plain and pincache,
#                 the order reversed every other round (default 3)
#   XOVER_CHURN   "off": no churn runs and no churn verdict (the simulated
#                 device, which runs no kernel, in xover-verdicts.sh)
#   XOVER_FORCED  "off": no third kind of run.  By default each round also
#                 runs xover under pincache with PINCACHE_STAGE_MIN=0 and
#                 PINCACHE_STAGE_FRESH_MIN=0 (every size staged, from
#                 every source): against plain, the crossover the staging
#                 thresholds are set from, per direction and kind of buffer
#                 (listed after the table; information, not a verdict)
#
# A markdown report on stdout: one row per point (plain and pincache µs, each
# the median of the rounds' medians, and pincache/plain), the churn's ms per
# batch, one "PASS: " or "FAIL: " line per criterion ("no slower": pincache's
# time at most XOVER_SLACK (default 1.03) times plain's, the spread between
# two plain runs of one point being a few percent), and whether every run
# copied the same bytes (the checksums).  Progress on stderr; each run's
# output and pincache's reports in OUTDIR.  XOVER_REPORT_ONLY=1 measures
# nothing and renders OUTDIR again.  Exit status 0 when every criterion
# passes, 1 otherwise; 0 with "no CUDA device" where there is none.
set -u
unset LD_PRELOAD # plain runs must be plain

srcdir=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=tests/bench/args.sh
. "$srcdir/tests/bench/args.sh"
bin=$builddir/tests/bench
slack=${XOVER_SLACK:-1.03}
# shellcheck source=tests/bench/benchlib.sh
. "$srcdir/tests/bench/benchlib.sh"

if [ "${XOVER_REPORT_ONLY:-0}" = 1 ]; then
    # shellcheck source=/dev/null
    . "$out/config.txt" || exit 2
else
    sizes=${XOVER_SIZES:-64K 256K 1M 4M 16M 64M 256M}
    reps=${XOVER_REPS:-40}
    rounds=${XOVER_ROUNDS:-3}
    churn=${XOVER_CHURN:-on}
    forced=${XOVER_FORCED:-on}
    printf "sizes='%s'\nreps='%s'\nrounds='%s'\nchurn='%s'\nforced='%s'\n" "$sizes" "$reps" "$rounds" "$churn" \
        "$forced" >"$out/config.txt"
    if [ "$churn" = off ]; then bench_build xover; else bench_build xover churn; fi
    bench_probe "$bin/xover"
    bench_machine
    rm -f "$out"/copies.* "$out"/churn.*
    t0=$(date +%s)
    # run NAME plain|pc|forced PROG ARGS...: NAME.out, NAME.err, pincache's NAME.json
    run() {
        local name=$1 how=$2
        shift 2
        case $how in
        plain) bench_run "$name" 200 -- "$@" ;;
        pc) bench_run "$name" 200 LD_PRELOAD="$lib" PINCACHE_REPORT="$out/$name.json" -- "$@" ;;
        forced) bench_run "$name" 200 LD_PRELOAD="$lib" PINCACHE_REPORT="$out/$name.json" PINCACHE_STAGE_MIN=0 PINCACHE_STAGE_FRESH_MIN=0 \
            -- "$@" ;;
        esac
    }
    kinds="plain pc"
    [ "$forced" = off ] || kinds="plain pc forced"
    for r in $(seq "$rounds"); do
        order=$kinds
        [ $((r % 2)) = 0 ] && order=$(echo "$kinds" | tr ' ' '\n' | tac | tr '\n' ' ')
        for how in $order; do
            # shellcheck disable=SC2086
            run "copies.$how.$r" "$how" "$bin/xover" copies "$reps" $sizes
            [ "$churn" = off ] || [ "$how" = forced ] ||
                run "churn.$how.$r" "$how" "$bin/churn" --variant pageable --size 1 --reps 5
        done
    done
    echo "wall=$(($(date +%s) - t0))" >>"$out/machine.txt"
fi

# point HOW SRC DIR SIZE: the median over the HOW runs of their medians (µs)
point() {
    cat "$out/copies.$1".*.out 2>/dev/null |
        sed -n "s/^RESULT src=$2 dir=$3 bytes=$(bytes "$4") us=\([0-9.]*\).*/\1/p" | med
}
churn_ms() {
    cat "$out/churn.$1".*.out 2>/dev/null | sed -n 's/^RESULT churn .*ms_per_batch=\([0-9.]*\).*/\1/p' | med
}
echo "## Pageable copies: plain against pincache (issue 19)"
echo
echo "- date: $(m date); GPU, driver: $(m gpu); host: $(m host); wall $(m wall) s"
echo "- command: \`$(m command)\`; $rounds processes of each, alternating; $reps samples a point"
echo
echo "cudaMemcpyAsync + cudaStreamSynchronize, µs per copy (fresh: the copy and the buffer's munmap)"
echo
forced=${forced:-off}
if [ "$forced" = off ]; then
    echo "| size | dir | source | plain | pincache | pincache/plain |"
    echo "|---|---|---|---:|---:|---:|"
else
    echo "| size | dir | source | plain | pincache | pincache/plain | every size staged | staged/plain |"
    echo "|---|---|---|---:|---:|---:|---:|---:|"
fi
slower=""
n=0
declare -A staged=()
for size in $sizes; do
    for src in warm fresh; do
        for dir in H2D D2H; do
            p=$(point plain "$src" "$dir" "$size")
            c=$(point pc "$src" "$dir" "$size")
            x=$(ratio "$c" "$p")
            if [ "$forced" = off ]; then
                echo "| $size | $dir | $src | ${p:-?} | ${c:-?} | ${x:-?} |"
            else
                f=$(point forced "$src" "$dir" "$size")
                fx=$(ratio "$f" "$p")
                echo "| $size | $dir | $src | ${p:-?} | ${c:-?} | ${x:-?} | ${f:-?} | ${fx:-?} |"
                staged["$dir $src $size"]=$fx
            fi
            n=$((n + 1))
            [ "$(within "$x" "$slack")" = 1 ] || slower="$slower $size $dir $src ${x:-?};"
        done
    done
done
echo
if [ "$forced" != off ]; then
    # The crossover of each direction and kind: the smallest size from which
    # staging (every size staged) is no slower than the driver at that size
    # and every larger one measured.
    echo "Crossover, staging every size against the driver (where the staging thresholds come from):"
    echo
    for dir in H2D D2H; do
        for src in warm fresh; do
            from=""
            for size in $sizes; do
                fx=${staged["$dir $src $size"]:-}
                if [ "$(within "$fx" 1)" = 1 ]; then [ -n "$from" ] || from=$size; else from=""; fi
            done
            if [ -n "$from" ]; then
                echo "- $dir $src: staging no slower from $from up"
            else
                echo "- $dir $src: the driver faster at the largest size"
            fi
        done
    done
    echo
fi
if [ "${churn:-on}" != off ]; then
    cp=$(churn_ms plain)
    cc=$(churn_ms pc)
    cx=$(ratio "$cc" "$cp")
    echo "1 MB pageable churn (\`churn --variant pageable --size 1\`): plain ${cp:-?} ms/batch, pincache ${cc:-?}, pincache/plain ${cx:-?}"
    echo
fi
if [ -z "$slower" ]; then
    verdict 1 "every staged point no slower than the driver ($n of $n within ${slack}x)"
else
    verdict 0 "points slower than the driver (pincache/plain):${slower%;}"
fi
[ "${churn:-on}" = off ] || verdict "$(within "$cx" "$slack")" "1 MB pageable churn no slower than plain (${cx:-?}x)"
sums=$(cat "$out"/copies.*.out 2>/dev/null | sed -n 's/^CHECK sum=//p' | sort -u)
nsum=$(cat "$out"/copies.*.out 2>/dev/null | grep -c '^CHECK sum=')
nkinds=2
[ "$forced" = off ] || nkinds=3
verdict "$([ "$nsum" = $((nkinds * rounds)) ] && [ "$(echo "$sums" | wc -l)" = 1 ] && echo 1 || echo 0)" \
    "every run copied the same bytes ($nsum checksums, $(echo "$sums" | grep -c .) distinct)"
echo
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
