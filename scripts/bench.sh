#!/usr/bin/env bash
# bench.sh [BUILDDIR] - pincache benchmarks; a markdown report on stdout.
#
# Builds tests/bench/*.cu into BUILDDIR/tests/bench and runs, for each size:
# the churn program plain and under BUILDDIR/src/.libs/libpincache.so, the
# hand-optimized two-buffer version, and the pageable version (plain and
# shimmed); then the hit-path microbenchmark, the variable-size workload and
# an observe-mode run.  Progress on stderr; logs and JSON reports in
# $PINCACHE_BENCH_LOGDIR (default: a temporary folder, printed at the end).
# PINCACHE_BENCH_SIZES: sizes in MB (default "1 8 64").
# PINCACHE_BENCH_BASE: another libpincache.so (an earlier commit's) whose hit
# path runs interleaved with this one's (rows base and base2), side by side,
# and in PINCACHE_BENCH_AB_ROUNDS (31) alternating rounds on CPU
# PINCACHE_BENCH_CPU (1).
set -u
unset LD_PRELOAD # plain runs must be plain

cmdline="$0 $*"
srcdir=$(cd "$(dirname "$0")/.." && pwd)
builddir=${1:-${top_builddir:-.}}
if ! builddir=$(cd "$builddir" 2>/dev/null && pwd); then
    echo "bench.sh: no build folder ${1:-.}" >&2
    exit 1
fi
lib=$builddir/src/.libs/libpincache.so
outdir=$builddir/tests/bench
sizes=${PINCACHE_BENCH_SIZES:-1 8 64}
# shellcheck source=tests/gpu/cuda-env.sh
. "$srcdir/tests/gpu/cuda-env.sh"

logdir=${PINCACHE_BENCH_LOGDIR:-}
if [ -n "$logdir" ]; then
    mkdir -p "$logdir" || exit 1
else
    logdir=$(mktemp -d "${TMPDIR:-/tmp}/pincache-bench.XXXXXX") || exit 1
fi

# PINCACHE_BENCH_REPORT_ONLY=1: measure nothing; render the report from the
# logs already in $PINCACHE_BENCH_LOGDIR (a run whose printed report was lost).
report_only=${PINCACHE_BENCH_REPORT_ONLY:-0}
runs="a b c d e f"
big=${sizes##* }
obs_batches=200
failed=0
if [ "$report_only" = 1 ]; then
    [ -n "${PINCACHE_BENCH_LOGDIR:-}" ] || { echo "bench.sh: REPORT_ONLY needs PINCACHE_BENCH_LOGDIR" >&2; exit 1; }
else
mkdir -p "$outdir" 2>/dev/null
pc_probe_device "$outdir" "$logdir/probe.log"
case $? in
1) echo "bench.sh: no CUDA device; nothing measured"; exit 0 ;;
2) echo "bench.sh: a CUDA device is present but the probe could not be built or run:" >&2
   cat "$logdir/probe.log" >&2
   exit 1 ;;
esac
if [ ! -f "$lib" ]; then
    echo "bench.sh: $lib not found (build pincache first)" >&2
    exit 1
fi

pids=()
progs=(churn hitpath varsize callcost forkcost)
for p in "${progs[@]}"; do
    extra=()
    [ "$p" = callcost ] && extra=(-lcuda)
    pc_build "$outdir/$p" "$srcdir/tests/bench/$p.cu" "${extra[@]}" >"$logdir/build-$p.log" 2>&1 &
    pids+=($!)
done
for i in "${!progs[@]}"; do
    if ! wait "${pids[$i]}"; then
        echo "bench.sh: building ${progs[$i]} failed:" >&2
        cat "$logdir/build-${progs[$i]}.log" >&2
        exit 1
    fi
done
fi  # report_only

# run NAME [VAR=VALUE...] PROG [ARGS...]: stdout in $logdir/NAME.out; "" on failure
run() {
    local name=$1 rc
    shift
    [ "$report_only" = 1 ] && return 0
    echo "bench.sh: $name" >&2
    timeout -k 5 60 env "$@" >"$logdir/$name.out" 2>"$logdir/$name.err"
    rc=$?
    if [ "$rc" != 0 ]; then
        echo "bench.sh: $name failed (exit $rc); see $logdir/$name.err" >&2
        failed=$((failed + 1))
    fi
    return "$rc"
}
# shim NAME: the environment of a shimmed run, in array $senv
shim() {
    senv=(LD_PRELOAD="$lib" PINCACHE_MODE=cache PINCACHE_TEST_NO_FENCES=0
          PINCACHE_REPORT="$logdir/$1.json")
}

# field NAME KEY: KEY=value from the RESULT line of NAME.out
field() {
    sed -n "s/^RESULT .* $2=\([^ ]*\).*/\1/p" "$logdir/$1.out" 2>/dev/null | head -n 1
}
# cc OP [LOG]: callcost's ns for OP in LOG (default: the plain callcost run)
cc() { sed -n "s/^RESULT callcost op=$1 ns=\([^ ]*\).*/\1/p" "${2:-$logdir/callcost.out}" 2>/dev/null | head -n 1; }

# json FILE KEY: the first number stored under KEY anywhere in FILE ("" if none).
# KEY_peak also matches {"KEY": {"peak": N}}.
json() {
    [ -s "$1" ] || return 0
    if command -v python3 >/dev/null 2>&1; then
        python3 - "$1" "$2" <<'EOF' 2>/dev/null
import json, sys

def find(o, k):
    if isinstance(o, dict):
        v = o.get(k)
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            return v
        if k.endswith("_peak") and isinstance(o.get(k[:-5]), dict):
            v = o[k[:-5]].get("peak")
            if isinstance(v, (int, float)):
                return v
        for v in o.values():
            r = find(v, k)
            if r is not None:
                return r
    elif isinstance(o, list):
        for v in o:
            r = find(v, k)
            if r is not None:
                return r
    return None

try:
    r = find(json.load(open(sys.argv[1])), sys.argv[2])
except Exception:
    r = None
print("" if r is None else r)
EOF
    else
        grep -o "\"$2\"[[:space:]]*:[[:space:]]*[0-9.eE+-]*" "$1" | head -n 1 | sed 's/.*:[[:space:]]*//'
    fi
}

# ratio A B [DIGITS]: A/B, or "n/a"
ratio() {
    awk -v a="${1:-}" -v b="${2:-}" -v d="${3:-2}" 'BEGIN {
        if (a == "" || b == "" || b + 0 == 0) print "n/a"; else printf "%.*f\n", d, a / b }'
}
or_fail() { if [ -n "$1" ]; then echo "$1"; else echo "FAIL"; fi; }

# ---- churn table.  pincache and the hand-optimized version run six times
# each, interleaved (a b a b ...), and each is represented by the median of
# its six medians: the same treatment for both.  At 64 MB a batch is the
# program's own memset, whose speed moved by 13% between two runs of the
# same program (run 4) and by 16% between runs of one call (run 9, four
# runs each), so fewer runs would measure the machine.
for s in $sizes; do
    run "churn.plain.$s" "$outdir/churn" --variant churn --size "$s"
    for k in $runs; do
        shim "churn.shim.$s.$k"
        run "churn.shim.$s.$k" "${senv[@]}" "$outdir/churn" --variant churn --size "$s"
        run "twobuf.$s.$k" "$outdir/churn" --variant twobuf --size "$s"
    done
    run "pageable.$s" "$outdir/churn" --variant pageable --size "$s"
    shim "pageable.shim.$s"
    run "pageable.shim.$s" "${senv[@]}" "$outdir/churn" --variant pageable --size "$s"
done
# ---- where a batch's time goes at the largest size: the hand-optimized
# version with Mapped buffers (every pincache block is Mapped), and the churn
# program with the shim loaded but passing through
run "twobuf.mapped.$big" "$outdir/churn" --variant twobuf --size "$big" --flags 2
run "churn.off.$big" LD_PRELOAD="$lib" PINCACHE_MODE=off "$outdir/churn" --variant churn --size "$big"

# ---- hit path: plain is slow (real pinning per call), so far fewer pairs.
# shim: the default fences (PINCACHE_FENCE=context); rtfence and drvfence:
# an event on the legacy stream and a query per non-blocking stream, through
# the runtime's or the driver's calls; *32: with 32 idle streams instead of 4;
# shim2: the default again at the end, for the spread between runs.
hp=(--pairs 100000 --batch 100 --warmup 1000)
base=${PINCACHE_BENCH_BASE:-}
hp_rows="shim rtfence drvfence shim32 rtfence32 shim2"
[ -n "$base" ] && hp_rows="shim base rtfence drvfence shim32 rtfence32 shim2 base2"
run hitpath.plain "$outdir/hitpath" --pairs 200 --batch 10 --warmup 10
for m in $hp_rows; do
    shim "hitpath.$m"
    case $m in base*) senv[0]=LD_PRELOAD=$base ;; esac
    case $m in
    rtfence*) fe=PINCACHE_FENCE=runtime ;;
    drvfence*) fe=PINCACHE_FENCE=driver ;;
    *) fe=PINCACHE_FENCE=context ;;
    esac
    case $m in *32) ns=32 ;; *) ns=4 ;; esac
    run "hitpath.$m" "${senv[@]}" "$fe" "$outdir/hitpath" "${hp[@]}" --streams "$ns"
done

# ---- with a base library: the two pairs side by side in short alternating
# runs (this one first in odd rounds, the base first in even ones).  The
# machine's speed for CUDA calls moved by 2x between two runs minutes apart
# (run 29's callcost, twice), so rows measured a minute apart compare the
# machine; the median of the rounds' ratios compares the libraries.  Some
# H100 hosts ran each process at one of two speeds, 2x apart (runs 106-109):
# 31 rounds, each process on one CPU (PINCACHE_BENCH_CPU, default 1, where
# taskset is at hand), and the ratios' quartiles beside their median.  Each
# round also times the fence's calls (callcost, plainly, on the same CPU),
# so that each round's pairs give their own bookkeeping against them.
ab_rounds=${PINCACHE_BENCH_AB_ROUNDS:-31}
ab_pin=()
command -v taskset >/dev/null 2>&1 && ab_pin=(taskset -c "${PINCACHE_BENCH_CPU:-1}")
if [ -n "$base" ]; then
    for r in $(seq 1 "$ab_rounds"); do
        order="cur base"
        [ $((r % 2)) = 0 ] && order="base cur"
        for w in $order; do
            shim "hitpath.ab.$r.$w"
            [ "$w" = base ] && senv[0]=LD_PRELOAD=$base
            run "hitpath.ab.$r.$w" "${senv[@]}" PINCACHE_FENCE=context "${ab_pin[@]}" "$outdir/hitpath" \
                --pairs 20000 --batch 100 --warmup 1000 --streams 4
        done
        run "callcost.ab.$r" "${ab_pin[@]}" "$outdir/callcost"
    done
fi

# ---- what the calls of a fence cost here, plainly (the hit pair's floor)
run callcost "$outdir/callcost"
# ---- what fork() costs a process holding pinned memory (DataLoader workers
# are forked at every epoch), plainly
run forkcost "$outdir/forkcost"
# ---- variable sizes (shimmed only: the question is how much pincache holds)
shim varsize.shim
run varsize.shim "${senv[@]}" "$outdir/varsize" --ops 20000 --max-live 48

# ---- observe mode: every churn free is issued while its kernel runs
shim observe
run observe "${senv[@]}" PINCACHE_MODE=observe "$outdir/churn" --variant churn --size 8 \
    --batches "$obs_batches" --reps 1 --warmup 0 --kernel-us 200

# ---- the measuring machine, kept with the logs for a later rendering
[ "$report_only" = 1 ] || {
    echo "date=$(date -u '+%Y-%m-%d %H:%M UTC')"
    echo "gpu=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -n 1)"
    echo "nvcc=$("$PC_NVCC" --version 2>/dev/null | grep -m1 release)"
    echo "host=$(grep -m1 'model name' /proc/cpuinfo 2>/dev/null | sed 's/.*: //'), $(nproc 2>/dev/null) CPUs, Linux $(uname -r)"
    echo "command=$cmdline"
} >"$logdir/machine.txt"

# ---- report
m() { sed -n "s/^$1=//p" "$logdir/machine.txt" 2>/dev/null | head -n 1; }
ver=$(sed -n 's/^#define PACKAGE_VERSION "\(.*\)"/\1/p' "$builddir/config.h" 2>/dev/null)

echo "## pincache benchmark run"
echo
echo "- date: $(m date)"
echo "- GPU, driver: $(m gpu)"
echo "- nvcc: $(m nvcc) (programs built with -O2 -cudart shared -arch=$PC_ARCH)"
echo "- host: $(m host)"
echo "- pincache: ${ver:-unknown}, $lib"
echo "- command: \`$(m command)\`"
[ "$report_only" = 1 ] && echo "- rendered later from that run's logs: \`$cmdline\` with PINCACHE_BENCH_REPORT_ONLY=1"
echo
echo "### Per-batch churn (ms/batch, median of 3 repetitions; lower is better)"
echo
echo "| size | plain churn | churn+pincache | hand-optimized twobuf | pageable | speedup (plain/pincache) | pincache vs twobuf (twobuf/pincache, target >= 0.95) | pageable+pincache |"
echo "|---|---|---|---|---|---|---|---|"
# med PREFIX: the median ms_per_batch of runs PREFIX.a, PREFIX.b, ... ("" if any failed)
med() {
    local k v all=""
    for k in $runs; do
        v=$(field "$1.$k" ms_per_batch)
        [ -n "$v" ] || { echo ""; return; }
        all="$all $v"
    done
    echo "$all" | tr ' ' '\n' | sed '/^$/d' | sort -g |
        awk '{ v[NR] = $1 } END { printf "%.4f\n", NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
for s in $sizes; do
    pl=$(field "churn.plain.$s" ms_per_batch)
    sh=$(med "churn.shim.$s")
    tb=$(med "twobuf.$s")
    pg=$(field "pageable.$s" ms_per_batch)
    ps=$(field "pageable.shim.$s" ms_per_batch)
    echo "| $s MB | $(or_fail "$pl") | $(or_fail "$sh") | $(or_fail "$tb") | $(or_fail "$pg") |" \
         "$(ratio "$pl" "$sh")x | $(ratio "$tb" "$sh") | $(or_fail "$ps") |"
done
echo
echo "Each pincache and twobuf figure is the median of $(echo $runs | wc -w) interleaved runs ($runs), each the median of 3 repetitions."
echo
echo "Where the time goes (ms per batch: runs $runs; fill = the program's memset, api = its allocation calls or twobuf's event wait):"
echo
echo "| size | pincache | twobuf | pincache fill | twobuf fill | pincache api | twobuf api |"
echo "|---|---|---|---|---|---|---|"
# ab NAME KEY: KEY of runs NAME.a, NAME.b, ..., separated by " / "
ab() {
    local k out=""
    for k in $runs; do out="$out${out:+ / }$(field "$1.$k" "$2")"; done
    echo "$out"
}
for s in $sizes; do
    echo "| $s MB | $(ab "churn.shim.$s" ms_per_batch) | $(ab "twobuf.$s" ms_per_batch) |" \
         "$(ab "churn.shim.$s" fill_ms) | $(ab "twobuf.$s" fill_ms) | $(ab "churn.shim.$s" api_ms) | $(ab "twobuf.$s" api_ms) |"
done
echo
echo "At $big MB: twobuf with Mapped buffers $(or_fail "$(field "twobuf.mapped.$big" ms_per_batch)") ms/batch" \
     "(fill $(field "twobuf.mapped.$big" fill_ms)); churn with the shim passing through (PINCACHE_MODE=off)" \
     "$(or_fail "$(field "churn.off.$big" ms_per_batch)") ms/batch."
echo
echo "Batches per repetition (plain / pincache a / twobuf a / pageable):" \
     "$(for s in $sizes; do printf '%s MB: %s/%s/%s/%s; ' "$s" \
        "$(field "churn.plain.$s" batches)" "$(field "churn.shim.$s.a" batches)" \
        "$(field "twobuf.$s.a" batches)" "$(field "pageable.$s" batches)"; done)"
echo
echo "pincache counters in the churn runs (run a, from PINCACHE_REPORT):"
echo
echo "| size | alloc_calls | alloc_hits | alloc_misses | alloc_fence_waits | real_alloc_calls | syncs_avoided |"
echo "|---|---|---|---|---|---|---|"
for s in $sizes; do
    j=$logdir/churn.shim.$s.a.json
    echo "| $s MB | $(json "$j" alloc_calls) | $(json "$j" alloc_hits) | $(json "$j" alloc_misses) |" \
         "$(json "$j" alloc_fence_waits) | $(json "$j" real_alloc_calls) | $(json "$j" syncs_avoided) |"
done
echo
echo "### Hit path: cudaHostAlloc(64 KB) + cudaFreeHost with idle non-blocking streams"
echo
echo "| | fences | streams | pairs | median ns/pair | p10 | p90 |"
echo "|---|---|---|---|---|---|---|"
for m in plain $hp_rows; do
    case $m in
    plain) fe="(none: real calls)" ;; rtfence*) fe=runtime ;; drvfence*) fe=driver ;; *) fe=context ;;
    esac
    echo "| $m | $fe | $(field "hitpath.$m" streams) | $(field "hitpath.$m" pairs) |" \
         "$(or_fail "$(field "hitpath.$m" median_ns)") | $(field "hitpath.$m" p10_ns) | $(field "hitpath.$m" p90_ns) |"
done
echo
echo "(fences: PINCACHE_FENCE. context, the default: one cuCtxRecordEvent + cuEventQuery per free;" \
     "runtime/driver: an event on the legacy stream and a query per non-blocking stream, through the runtime's or the driver's calls." \
     "shim2 repeats shim at the end of the run.${base:+ base and base2: the library $base, right after shim and shim2.})"
echo
echo "Speedup of the pair under pincache: $(ratio "$(field hitpath.plain median_ns)" "$(field hitpath.shim median_ns)" 0)x"
echo
if [ -n "$base" ]; then
    abr="" abc="" abb=""
    for r in $(seq 1 "$ab_rounds"); do
        c=$(field "hitpath.ab.$r.cur" median_ns) b=$(field "hitpath.ab.$r.base" median_ns)
        [ -n "$c" ] && [ -n "$b" ] || continue
        abc="$abc $c" abb="$abb $b" abr="$abr $(ratio "$c" "$b" 3)"
    done
    # pct_of P V...: the value at fraction P of the sorted Vs (0.5: the median)
    pct_of() { _p=$1; shift; echo "$@" | tr ' ' '\n' | grep . | sort -g | awk -v p="$_p" '{ v[NR] = $1 } END { if (NR) print v[int(p * (NR - 1) + 1.5)] }'; }
    med_of() { pct_of 0.5 "$@"; }
    echo "Side by side with the base library ($(echo "$abr" | wc -w) alternating rounds of 20,000 pairs, 4 streams," \
         "context fences${ab_pin[*]:+, ${ab_pin[*]}}): this library $(or_fail "$(med_of "$abc")") ns, the base $(or_fail "$(med_of "$abb")") ns" \
         "(medians of the rounds); this/base per round:$abr; **median ratio $(or_fail "$(med_of "$abr")")**" \
         "(quartiles $(or_fail "$(pct_of 0.25 "$abr")"), $(or_fail "$(pct_of 0.75 "$abr")"))."
    echo
    # Each round's bookkeeping against that round's fence calls (callcost
    # on the same CPU, right after the round's pairs).
    abk="" abkb="" abf=""
    for r in $(seq 1 "$ab_rounds"); do
        c=$(field "hitpath.ab.$r.cur" median_ns) b=$(field "hitpath.ab.$r.base" median_ns)
        f=$(cc drv_ctx "$logdir/callcost.ab.$r.out")
        [ -n "$c" ] && [ -n "$b" ] && [ -n "$f" ] || continue
        abf="$abf $f"
        abk="$abk $(awk -v p="$c" -v f="$f" 'BEGIN { if (f > 0) printf "%.2f", (p - f) / f }')"
        abkb="$abkb $(awk -v p="$b" -v f="$f" 'BEGIN { if (f > 0) printf "%.2f", (p - f) / f }')"
    done
    echo "Hit pair bookkeeping / fence calls in those rounds (each round's pair less its own cuCtxRecordEvent+cuEventQuery," \
         "timed by callcost after it on the same CPU; $(echo "$abk" | wc -w) rounds; fence calls median $(or_fail "$(med_of "$abf")") ns):" \
         "**this library $(or_fail "$(med_of "$abk")")** (quartiles $(or_fail "$(pct_of 0.25 "$abk")"), $(or_fail "$(pct_of 0.75 "$abk")"))," \
         "the base $(or_fail "$(med_of "$abkb")") (quartiles $(or_fail "$(pct_of 0.25 "$abkb")"), $(or_fail "$(pct_of 0.75 "$abkb")")); target: at most 0.5."
    echo
fi
echo "What a fence's calls cost on this machine, plainly, device idle (tests/bench/callcost.cu, ns per call," \
     "median of 51 batches of 1000; clock source $(sed -n 's/^RESULT callcost clocksource=//p' "$logdir/callcost.out" 2>/dev/null)):" \
     "clock_gettime $(cc clock), cudaGetDevice $(cc getdev), legacy-stream cudaEventRecord+cudaEventQuery $(cc rt_legacy)" \
     "(driver $(cc drv_legacy)), cudaStreamQuery of an idle stream $(cc rt_squery) (driver $(cc drv_squery))." \
     "A free's fence with 4 non-blocking streams makes one record+query and 4 stream queries:" \
     "$(awk -v a="$(cc rt_legacy)" -v b="$(cc rt_squery)" 'BEGIN { if (a == "" || b == "") print "n/a"; else printf "%.0f", a + 4 * b }') ns" \
     "through the runtime. The default fence, cuCtxRecordEvent+cuEventQuery: $(cc drv_ctx) ns with 4 idle streams," \
     "$(cc drv_ctx32) with 32; complete at once on the idle device $(sed -n 's/^RESULT callcost ctx_immediate=//p' "$logdir/callcost.out" 2>/dev/null) times." \
     "The health question before a cached allocation, cuCtxGetStreamPriorityRange: $(cc drv_prio) ns" \
     "(cuStreamQuery of the legacy stream: $(cc drv_legacy_squery); cuEventQuery of a completed event: $(cc drv_evq))." \
     "Classifying a copy's host memory, cudaPointerGetAttributes: $(cc ptrattr_pageable) ns on pageable memory," \
     "$(cc ptrattr_pinned) on pinned."
echo
# ---- the hit pair's bookkeeping (issue 19, item 4): a row's pair less the
# fence's own two calls, both measured in this run; the target is at most
# half the fence's calls.  Then the bookkeeping at callcost's prices: the
# other calls a hit pair makes (a cuCtxGetCurrent in each call, whose
# context names the device, cudaGetDevice being asked once per context;
# the allocation's cuCtxGetStreamPriorityRange: tests/bench/simhit.sh
# counts them) and its clock reads (rdtsc where the clock source is tsc,
# PINCACHE_CLOCK=auto, else clock_gettime): two a timed call, and a cache
# call is timed one in 16 (PC_HIT_SAMPLE, src/diag/call.h), so a quarter
# of a read a pair on average; the rest is pincache's own code.
echo "Hit pair bookkeeping = pair − fence calls (the row's median ns/pair less callcost's cuCtxRecordEvent+cuEventQuery with as many idle streams; same run; target: at most half the fence calls):"
echo
echo "| row | streams | pair | fence calls | bookkeeping | bookkeeping / fence calls (target <= 0.5) | of which other CUDA calls | clock reads | pincache's own code |"
echo "|---|---|---|---|---|---|---|---|---|"
csrc=$(sed -n 's/^RESULT callcost clocksource=//p' "$logdir/callcost.out" 2>/dev/null)
if [ "$csrc" = tsc ] && [ -n "$(cc tsc)" ]; then rd=$(cc tsc) rdn=rdtsc; else rd=$(cc clock) rdn=clock_gettime; fi
for m in shim shim2 shim32; do
    case $m in *32) fc=$(cc drv_ctx32) ;; *) fc=$(cc drv_ctx) ;; esac
    p=$(field "hitpath.$m" median_ns)
    awk -v m="$m" -v n="$(field "hitpath.$m" streams)" -v p="$p" -v f="$fc" \
        -v q="$(cc drv_prio)" -v c="$(cc drv_ctxcur)" -v r="$rd" 'BEGIN {
        if (p == "" || f == "" || f + 0 == 0) { printf "| %s | %s | %s | %s | FAIL | n/a | | | |\n", m, n, p, f; exit }
        b = p - f; o = (q == "" || c == "") ? "" : q + 2 * c; k = (r == "") ? "" : r / 4
        printf "| %s | %s | %.0f | %.0f | %.0f | %.2f | %s | %s | %s |\n", m, n, p, f, b, b / f,
            o == "" ? "n/a" : sprintf("%.0f", o), k == "" ? "n/a" : sprintf("%.0f", k),
            (o == "" || k == "") ? "n/a" : sprintf("%.0f", b - o - k) }'
done
echo
echo "(other CUDA calls: cuCtxGetStreamPriorityRange + 2 × cuCtxGetCurrent at callcost's prices;" \
     "clock reads: 2 × ${rdn} in one call of 16, a quarter of a read a pair (the clock source is ${csrc:-unknown}); pincache's own code: the bookkeeping less both.)"
echo
echo "fork() + the child's exit + waitpid with pinned memory held (tests/bench/forkcost.cu, median of 21, us):"
sed -n 's/^RESULT forkcost /- /p' "$logdir/forkcost.out" 2>/dev/null
echo
echo "### Variable sizes (64 KB..32 MB log-uniform, live set <= 48, 20000 operations, pincache)"
echo
j=$logdir/varsize.shim.json
req=$(field varsize.shim peak_live_requested_bytes)
lp=$(json "$j" live_bytes_peak)
cp=$(json "$j" cached_bytes_peak)
rp=$(json "$j" requested_bytes_peak)
ra=$(json "$j" real_alloc_bytes)
rf=$(json "$j" real_free_bytes)
held_peak=$(json "$j" held_bytes_peak)
held_exit=$(awk -v a="$ra" -v f="$rf" 'BEGIN { if (a != "") printf "%.0f\n", a - f }')
sum_peak=$(awk -v a="$lp" -v b="$cp" 'BEGIN { if (a != "" && b != "") printf "%.0f\n", a + b }')
echo "- peak live requested bytes (program): $(or_fail "$req"); pincache's requested_bytes_peak: ${rp:-n/a}"
echo "- live_bytes_peak: ${lp:-n/a}, cached_bytes_peak: ${cp:-n/a}, trim_blocks: $(json "$j" trim_blocks)"
echo "- peak pinned bytes held (held_bytes_peak) / peak request: $(ratio "$held_peak" "$req" 3) (target <= 1.15)"
echo "- (live_bytes_peak + cached_bytes_peak) / peak request: $(ratio "$sum_peak" "$req" 3) (a looser upper bound)"
echo "- pinned held at exit (real_alloc_bytes - real_free_bytes) / peak request: $(ratio "$held_exit" "$req" 3) (the peak held itself when trim_blocks is 0)"
echo "- real_alloc_calls: $(json "$j" real_alloc_calls), allocs: $(field varsize.shim allocs), time: $(field varsize.shim seconds) s"
echo
echo "### Observe mode (PINCACHE_MODE=observe, churn 8 MB, $obs_batches batches, 200 us kernel)"
echo
echo "- frees issued while the batch's kernel was in flight (by construction): $(or_fail "$(field observe frees)")"
echo "- would_sync reported: $(json "$logdir/observe.json" would_sync), would_sync_ns: $(json "$logdir/observe.json" would_sync_ns), free_calls: $(json "$logdir/observe.json" free_calls)"
echo
echo "Logs and JSON reports: $logdir"
if [ "$failed" -gt 0 ]; then
    echo
    echo "**$failed benchmark run(s) failed; see the logs.**"
    exit 1
fi
exit 0
