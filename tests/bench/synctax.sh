#!/usr/bin/env bash
# synctax.sh BUILDDIR OUTDIR - issue 19, items 1 and 2 ("no tax on
# synchronizing calls", "never slower than the driver, at any size"): what
# an idle cudaStreamSynchronize, an idle cudaDeviceSynchronize and small
# copies pincache leaves to the runtime (4 KiB and 64 KiB, H2D and D2H,
# pageable and pinned, cudaMemcpy and cudaMemcpyAsync + cudaStreamSynchronize)
# cost plainly and under pincache, side by side in one run.  The program
# (synctax.c) runs SYNCTAX_ROUNDS times (default 5) plainly and as many
# times under LD_PRELOAD=libpincache.so (default options), alternately, the
# order reversed every other round; each run makes SYNCTAX_ARGS ("51 2000":
# batches, calls per batch, a tenth of them for a copy; a third word, sync
# or copy, measures only those) and prints per call the median over its
# batches.  Each figure is the median of the runs'.
#
# SYNCTAX_LIB: another libpincache.so (an earlier commit's) to measure.
# SYNCTAX_CPU: a CPU list (taskset -c) every run is held to, plain and
# pincache alike, so that neither side's figures move with the scheduler's
# choice of CPU (hosts whose CPUs run at two speeds); unset: not held.
# The program: SYNCTAX_PROG, else synctax.cu built here with nvcc into
# BUILDDIR/tests/bench/synctax (the section "synctax" of
# tests/gpu/sections.sh, which scripts/h200.sh runs).  make check builds
# tests/bench/synctax_sim against the simulated runtime; `make
# bench-synctax-sim` runs it through this script (its copies take no
# transfer time there and run in the calling thread: SIM_COPY_GBPS=0
# SIM_INLINE_OPS=1, tests/doubles/README.md).
#
# A markdown report on stdout: one table row per case (plain, pincache,
# the difference), one "PASS: " or "FAIL: " line per case against
# SYNCTAX_TARGET_NS (default 100: issue 19 allows about 0.1 us for a sync)
# or, for a copy, SYNCTAX_COPY_TARGET_NS (default 100), and how many calls
# pincache counted as waits (a sync by its 5 us rule: a preempted call can
# pass it; a copy by a query of its stream).  OUTDIR keeps each run's
# output (NAME.out, NAME.err) and pincache's reports (NAME.json).  Exit
# status: 0 when every criterion passes, 1 otherwise, 2 when a run failed;
# 0 with "no CUDA device" where there is none.
set -u
unset LD_PRELOAD # plain runs must be plain

srcdir=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=tests/bench/args.sh
. "$srcdir/tests/bench/args.sh"
lib=${SYNCTAX_LIB:-$lib}
rounds=${SYNCTAX_ROUNDS:-5}
args=${SYNCTAX_ARGS:-51 2000}
target=${SYNCTAX_TARGET_NS:-100}
ctarget=${SYNCTAX_COPY_TARGET_NS:-100}
pin=()
if [ -n "${SYNCTAX_CPU:-}" ]; then
    command -v taskset >/dev/null || { echo "synctax.sh: SYNCTAX_CPU needs taskset" >&2; exit 2; }
    pin=(taskset -c "$SYNCTAX_CPU")
fi
[ -f "$lib" ] || { echo "synctax.sh: $lib not found (build pincache first)" >&2; exit 2; }

prog=${SYNCTAX_PROG:-}
if [ -z "$prog" ]; then
    prog=$builddir/tests/bench/synctax
    # shellcheck source=tests/gpu/cuda-env.sh
    . "$srcdir/tests/gpu/cuda-env.sh"
    pc_find_nvcc || { echo "synctax.sh: no nvcc; nothing measured"; exit 0; }
    mkdir -p "$builddir/tests/bench" || exit 2
    pc_build "$prog" "$srcdir/tests/bench/synctax.cu" >"$out/build.log" 2>&1 ||
        { echo "synctax.sh: building synctax failed:" >&2; cat "$out/build.log" >&2; exit 2; }
fi
[ -x "$prog" ] || { echo "synctax.sh: no program $prog" >&2; exit 2; }

# run NAME plain|pincache: NAME.out, NAME.err (and NAME.json); its exit status
run() {
    local env=()
    [ "$2" = plain ] || env=(LD_PRELOAD="$lib" PINCACHE_REPORT="$out/$1.json")
    echo "synctax.sh: $1" >&2
    rm -f "$out/$1.json"
    # shellcheck disable=SC2086
    timeout -k 5 120 env "${env[@]}" "${pin[@]}" "$prog" $args >"$out/$1.out" 2>"$out/$1.err"
}

rm -f "$out"/run.*
failed=0
for r in $(seq "$rounds"); do
    order="plain pincache"
    [ $((r % 2)) = 0 ] && order="pincache plain"
    for how in $order; do
        run "run.$how.$r" "$how"
        rc=$?
        if [ "$rc" = 3 ]; then
            echo "synctax.sh: no CUDA device; nothing measured"
            exit 0
        elif [ "$rc" != 0 ]; then
            echo "synctax.sh: run.$how.$r failed (exit $rc); see $out/run.$how.$r.err" >&2
            failed=$((failed + 1))
        fi
    done
done

# median HOW CALL: the median over the HOW runs of their medians ("" when none)
median() {
    cat "$out"/run."$1".*.out 2>/dev/null | sed -n "s/^SYNCTAX $2 median_ns=\([0-9.]*\).*/\1/p" | sort -g |
        awk '{ v[NR] = $1 } END { if (NR) printf "%.1f\n", NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
# counted KEY FIELD: FIELD of apis.KEY summed over the pincache runs' reports
counted() {
    python3 -c 'import json, sys
n = 0
for f in sys.argv[3:]:
    n += json.load(open(f))["apis"][sys.argv[1]][sys.argv[2]]
print(n)' "$1" "$2" "$out"/run.pincache.*.json 2>/dev/null || echo "-"
}

echo "## Idle synchronizing calls and small copies, plain and under pincache (issue 19)"
echo
echo "- date: $(date -u '+%Y-%m-%d %H:%M UTC'); host: $(nproc) CPUs, Linux $(uname -r)"
gpu=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -n 1)
echo "- GPU, driver: ${gpu:-none found (a simulated device?)}"
echo "- program: $prog $args; $rounds runs each way, alternating; pincache: $lib"
echo "- CPUs: ${SYNCTAX_CPU:-any (SYNCTAX_CPU unset)}"
echo "- command: \`$cmdline\`"
echo "- a copy: cudaMemcpy (memcpy-), or cudaMemcpyAsync + cudaStreamSynchronize (async-), of 4 KiB or 64 KiB"
echo
echo "| call | plain, ns/call | pincache, ns/call | pincache - plain, ns | target |"
echo "|---|---:|---:|---:|---:|"
verdicts=()
names=$(cat "$out"/run.plain.*.out 2>/dev/null | awk '$1 == "SYNCTAX" && !seen[$2]++ { print $2 }')
for c in $names; do
    case $c in
    stream) what="idle cudaStreamSynchronize" t=$target ;;
    device) what="idle cudaDeviceSynchronize" t=$target ;;
    *) what="copy $c" t=$ctarget ;;
    esac
    p=$(median plain "$c")
    s=$(median pincache "$c")
    d=$(awk -v p="$p" -v s="$s" 'BEGIN { if (p != "" && s != "") printf "%+.1f\n", s - p }')
    echo "| $what | ${p:-(no figure)} | ${s:-(no figure)} | ${d:-(no figure)} | <= $t |"
    ok=$(awk -v d="$d" -v t="$t" 'BEGIN { print (d != "" && d + 0 <= t) ? "PASS" : "FAIL" }')
    verdicts+=("$ok: $what: pincache adds ${d:-(no figure)} ns per call, target <= $t")
done
echo
echo "Calls pincache counted as waits (its reports, summed over the runs):"
for a in cudaStreamSynchronize cudaDeviceSynchronize cudaMemcpy cudaMemcpyAsync; do
    echo "- $a: $(counted $a synced) of $(counted $a calls)"
done
echo
[ ${#verdicts[@]} -gt 0 ] || verdicts=("FAIL: no figures")
printf '%s\n' "${verdicts[@]}"
echo
echo "Runs and reports: $out."
[ "$failed" = 0 ] || { echo "**$failed run(s) failed; see their .err files.**"; exit 2; }
case "${verdicts[*]}" in *FAIL:*) exit 1 ;; esac
exit 0
