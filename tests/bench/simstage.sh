#!/usr/bin/env bash
# simstage.sh BUILDDIR OUTDIR - issue 19, item 5 ("pageable as fast as
# pinned"): what pincache itself costs of one staged 2.5 MiB pageable copy
# on the simulated device (simstage.c; make check builds it, `make
# bench-simstage-sim` runs this).  For each copy (H2D and D2H, each as
# cudaMemcpyAsync + cudaStreamSynchronize and as cudaMemcpy), with one copy
# thread (the caller alone, as in the reference) and with the default
# threads: the staged copy against the same bytes moved by hand through a
# pinned buffer with the sim's own calls, per copy, in wall time and in the
# calling thread's CPU time, and the calls the staged copy reaches the sim
# with (SIM_CALLS=1).  SIM_COPY_GBPS=0 (the sim's DMA is its memcpy, no
# sleep) and PINCACHE_STAGE_NT=0 (plain stores into the ring, as by hand:
# non-temporal ones help a real DMA, not the sim's memcpy).
#
# SIMSTAGE_LIBS: the libpincache.so files to compare (default: the
# build's), alternating run by run; SIMSTAGE_ROUNDS runs of each (default
# 3), SIMSTAGE_ARGS for each run (default "--copies 1000 --batch 20").
# Each figure is the median of the runs' medians.  Numbers of a shared CI
# machine: compare only rows of one run.
set -u
unset LD_PRELOAD

srcdir=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=tests/bench/args.sh
. "$srcdir/tests/bench/args.sh"
read -ra libs <<<"${SIMSTAGE_LIBS:-$lib}"
rounds=${SIMSTAGE_ROUNDS:-3}
args=${SIMSTAGE_ARGS:---copies 1000 --batch 20}
prog=$builddir/tests/bench/simstage
[ -x "$prog" ] || { echo "simstage.sh: no $prog (make check builds it)" >&2; exit 2; }
for l in "${libs[@]}"; do
    [ -f "$l" ] || { echo "simstage.sh: $l not found" >&2; exit 2; }
done

cases="h2d: d2h:--d2h h2d-sync:--sync d2h-sync:--sync,--d2h"
failed=0
# run OUT LIB THREADS CASEARGS [MORE...]
run() {
    local o=$1 l=$2 t=$3 c=$4
    shift 4
    # shellcheck disable=SC2086,SC2068
    SIM_COPY_GBPS=0 PINCACHE_STAGE_NT=0 PINCACHE_STAGE_THREADS=$t PINCACHE_REPORT=/dev/null \
        LD_PRELOAD="$l" timeout -k 5 600 "$prog" ${c//,/ } "$@" >"$o" 2>"$o.err" ||
        { echo "simstage.sh: $o failed; see $o.err" >&2; failed=$((failed + 1)); }
}
rm -f "$out"/run.*
for r in $(seq "$rounds"); do
    for i in "${!libs[@]}"; do
        for c in $cases; do
            for t in 1 0; do
                echo "simstage.sh: round $r, library $((i + 1)), ${c%%:*}, threads $t" >&2
                # shellcheck disable=SC2086
                run "$out/run.$i.${c%%:*}.$t.$r" "${libs[$i]}" "$t" "${c#*:}" $args
            done
        done
    done
done
for i in "${!libs[@]}"; do
    for c in $cases; do
        SIM_CALLS=1 run "$out/calls.$i.${c%%:*}" "${libs[$i]}" 0 "${c#*:}" --calls --copies 64
    done
done

# median FILES... FIELD: the median of FIELD over the RESULT lines of the files
median() {
    local f=${*: -1}
    cat "${@:1:$#-1}" 2>/dev/null | sed -n "s/^RESULT simstage .* $f=\(-*[0-9.]*\).*/\1/p" | sort -g |
        awk '{ v[NR] = $1 } END { if (NR) printf "%.0f\n", NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

echo "## A staged 2.5 MiB pageable copy on the simulated device (issue 19, item 5)"
echo
echo "- date: $(date -u '+%Y-%m-%d %H:%M UTC'); host: $(nproc) CPUs, Linux $(uname -r)"
echo "- program: $prog $args; $rounds runs each; SIM_COPY_GBPS=0 PINCACHE_STAGE_NT=0"
for i in "${!libs[@]}"; do
    echo "- library $((i + 1)): ${libs[$i]}"
done
echo "- command: \`$cmdline\`"
echo
echo "| library | copy | copy threads | staged, us | by hand, us | pincache's overhead, ns | its CPU time, ns | calls per copy |"
echo "|---|---|---|---:|---:|---:|---:|---:|"
for i in "${!libs[@]}"; do
    for c in $cases; do
        calls=$(awk '$1 == "total" { print $2 }' "$out/calls.$i.${c%%:*}" 2>/dev/null)
        for t in 1 0; do
            set -- "$out"/run."$i"."${c%%:*}"."$t".*
            s=$(median "$@" staged_ns) h=$(median "$@" ref_ns)
            echo "| $((i + 1)) | ${c%%:*} | $([ "$t" = 1 ] && echo 1 || echo default) |" \
                "$(awk -v v="$s" 'BEGIN { if (v != "") printf "%.1f", v / 1000 }') |" \
                "$(awk -v v="$h" 'BEGIN { if (v != "") printf "%.1f", v / 1000 }') |" \
                "$(median "$@" overhead_ns) | $(median "$@" overhead_cpu_ns) | ${calls:--} |"
        done
    done
done
echo
echo "Runs: $out."
[ "$failed" = 0 ] || exit 2
exit 0
