# benchlib.sh - sourced (bash) by issue 19's side-by-side benchmark scripts
# (xover.sh, cuptitax.sh, nodeshare.sh): their programs built, figures from
# their logs and their verdict lines.  Needs srcdir, and args.sh's out,
# builddir and lib.
# shellcheck shell=bash

# med: the median of the numbers on stdin ("" when none)
med() {
    sort -g | awk '{ v[NR] = $1 } END { if (NR) printf "%.6g\n", NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
# bytes SIZE: SIZE (K/M/G: powers of 1024) in bytes
bytes() {
    awk -v s="$1" 'BEGIN { n = s + 0; u = substr(s, length(s));
        printf "%.0f\n", n * (u == "K" ? 1024 : u == "M" ? 1048576 : u == "G" ? 1073741824 : 1) }'
}
# ratio A B: A/B to 3 decimals, "" when either is missing
ratio() {
    awk -v a="${1:-}" -v b="${2:-}" 'BEGIN { if (a == "" || b == "" || b + 0 == 0) print ""; else printf "%.3f\n", a / b }'
}
# within R MAX: 1 when R is a number at most MAX, else 0
within() { awk -v r="${1:-}" -v s="$2" 'BEGIN { print (r != "" && r + 0 <= s) ? 1 : 0 }'; }
# m KEY: KEY=value from OUTDIR/machine.txt
m() { sed -n "s/^$1=//p" "$out/machine.txt" 2>/dev/null | head -n 1; }
# verdict OK TEXT: one criterion's PASS or FAIL line, counted
pass=0 fail=0
verdict() {
    if [ "$1" = 1 ]; then echo "PASS: $2"; pass=$((pass + 1)); else echo "FAIL: $2"; fail=$((fail + 1)); fi
}
# bench_machine: the date, the GPU, the host and the command line
# ($cmdline) into OUTDIR/machine.txt
bench_machine() {
    {
        echo "date=$(date -u '+%Y-%m-%d %H:%M UTC')"
        echo "gpu=$(nvidia-smi --query-gpu=name,driver_version,pcie.link.gen.current,pcie.link.width.current \
            --format=csv,noheader 2>/dev/null | head -n 1)"
        echo "host=$(nproc) CPUs, Linux $(uname -r)"
        echo "command=$cmdline"
    } >"$out/machine.txt"
}
# bench_run NAME SECONDS [VAR=VALUE...] -- PROG ARGS...: NAME.out and
# NAME.err in OUTDIR, under timeout; the variables set for it (LD_PRELOAD
# among them for pincache's runs)
bench_run() {
    local name=$1 secs=$2 env=()
    shift 2
    while [ $# -gt 0 ] && [ "$1" != -- ]; do env+=("$1"); shift; done
    shift
    echo "${0##*/}: $name" >&2
    timeout -k 5 "$secs" env "${env[@]}" "$@" >"$out/$name.out" 2>"$out/$name.err" ||
        echo "${0##*/}: $name failed (exit $?); see $out/$name.err" >&2
}
# bench_build PROG...: tests/bench/PROG.cu built into BUILDDIR/tests/bench
# (cuda-env.sh's pc_build); the script ends with status 0 and a line on
# stdout when there is no nvcc, with status 2 when the library is not built
# or a build failed (OUTDIR/build.log)
bench_build() {
    local p
    # shellcheck source=tests/gpu/cuda-env.sh
    . "$srcdir/tests/gpu/cuda-env.sh"
    pc_find_nvcc || { echo "${0##*/}: no nvcc; nothing measured"; exit 0; }
    [ -f "$lib" ] || { echo "${0##*/}: $lib not found (build pincache first)" >&2; exit 2; }
    mkdir -p "$builddir/tests/bench" || exit 2
    : >"$out/build.log"
    for p in "$@"; do
        pc_build "$builddir/tests/bench/$p" "$srcdir/tests/bench/$p.cu" >>"$out/build.log" 2>&1 ||
            { echo "${0##*/}: building $p failed:" >&2; cat "$out/build.log" >&2; exit 2; }
    done
}
# bench_probe PROG: PROG probe, which exits 3 where there is no CUDA device:
# then the script ends with status 0 and a line on stdout; status 2 when
# the probe failed otherwise
bench_probe() {
    timeout -k 5 60 "$1" probe >"$out/probe.out" 2>&1
    case $? in
    0) ;;
    3) echo "${0##*/}: no CUDA device; nothing measured"; exit 0 ;;
    *) echo "${0##*/}: the probe failed:" >&2; cat "$out/probe.out" >&2; exit 2 ;;
    esac
}
