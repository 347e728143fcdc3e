#!/usr/bin/env bash
# run-gpu.sh BUILDDIR - pincache's CUPTI timeline on a real GPU; TAP on stdout.
# Not part of make check (CI has no GPU).  No CUDA device: "1..0 # SKIP".
# Takes well under 90 s on an H200.  Logs and reports stay in
# BUILDDIR/tests/cupti/gpu-run/.
#
#  1  churn, 200 batches, PINCACHE_MODE=observe PINCACHE_CUPTI=on: the frees
#     CUPTI saw waiting for GPU work = the fences' would_sync = the frees the
#     program issued while its kernel was in flight (200); the CUPTI stall
#     agrees within 5% with the time measured around the real calls
#     (would_sync_ns); no records dropped
#  2  overhead: the same churn in cache mode, short kernels, CUPTI on against
#     off; the ratio is printed (target <= 1.03: a TODO point above it)
#  3  torch.profiler (if python3 has torch with CUDA): as many GPU events with
#     pincache (PINCACHE_CUPTI=auto) as without it, and the report says CUPTI
#     was handed over or never taken
#  4  compute-sanitizer --tool memcheck (if installed): a small churn under
#     pincache completes with no error, and pincache did not take CUPTI
set -u
unset LD_PRELOAD PINCACHE_CUPTI PINCACHE_MODE PINCACHE_REPORT PINCACHE_CUPTI_LIB

srcdir=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=tests/gpu/cuda-env.sh
. "$srcdir/tests/gpu/cuda-env.sh"
pc_gpu_start cupti "${1:-.}"
if ! pc_build "$out/gpu_cupti" "$srcdir/tests/cupti/gpu_cupti.cu" >"$out/build.log" 2>&1; then
    echo "Bail out! cannot build gpu_cupti"
    sed 's/^/# /' "$out/build.log"
    exit 1
fi
command -v python3 >/dev/null 2>&1 || { echo "Bail out! python3 is needed to read the reports"; exit 1; }

n=0 nfail=0
ok() { n=$((n + 1)); echo "ok $n - $*"; }
notok() { n=$((n + 1)); nfail=$((nfail + 1)); echo "not ok $n - $*"; }
check() { if [ "$1" -eq 0 ]; then shift; ok "$@"; else shift; notok "$@"; fi; }
diag() { sed 's/^/# /'; }
# checkj FILE EXPR MESSAGE: one point, ok when EXPR (see jq_) is true.
checkj() { local f=$1 e=$2; shift 2; [ "$(jq_ "$f" "$e" 2>&1)" = True ]; check $? "$@"; }

# jq_ FILE EXPR: a Python expression over r (the report), s (its stats) and
# a (its apis), printed.
jq_() {
    python3 - "$1" "$2" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
s, a = r["stats"], r["apis"]
print(eval(sys.argv[2]))
EOF
}

result() { sed -n "s/.*RESULT .*$1=\([0-9.]*\).*/\1/p" "$2" | tail -n 1; }

# --- 1: CUPTI attribution against the fences and the program's own count ---
t1=$out/t1
PINCACHE_MODE=observe PINCACHE_CUPTI=on PINCACHE_REPORT=$t1.json PINCACHE_LOG=info \
    LD_PRELOAD=$lib timeout -k 5 60 "$out/gpu_cupti" --batches 200 --kernel-us 20000 --size-kb 64 \
    >"$t1.out" 2>"$t1.err"
rc=$?
inflight=$(result inflight "$t1.out")
if [ "$rc" -ne 0 ] || [ ! -f "$t1.json" ] || [ -z "$inflight" ]; then
    notok "churn under CUPTI ran (exit status $rc)"
    diag <"$t1.err"
else
    ok "churn under PINCACHE_MODE=observe PINCACHE_CUPTI=on ran"
    jq_ "$t1.json" '"\n".join(r["summary"])' | diag
    checkj "$t1.json" 's["cupti_enabled"] == 1 and s["cupti_handed_over"] == 0' \
        "CUPTI was on for the whole run"
    waited=$(jq_ "$t1.json" 'a["cudaFreeHost"]["gpu_waited"]')
    would=$(jq_ "$t1.json" 's["would_sync"]')
    [ "$inflight" -eq 200 ]
    check $? "the program freed 200 blocks while its kernel was in flight (got $inflight)"
    [ "$waited" -eq "$would" ] && [ "$waited" -eq "$inflight" ]
    check $? "frees CUPTI saw waiting ($waited) = fence-based would_sync ($would) = in flight ($inflight)"
    stall=$(jq_ "$t1.json" 'a["cudaFreeHost"]["gpu_stall_ns"]')
    timed=$(jq_ "$t1.json" 's["would_sync_ns"]')
    diagstall=$(jq_ "$t1.json" 'a["cudaFreeHost"]["stall_ns"]')
    python3 -c "import sys; s,t=$stall,$timed; sys.exit(0 if t > 0 and abs(s-t) <= 0.05*t else 1)"
    check $? "CUPTI stall $((stall / 1000000)) ms within 5% of the time inside the frees $((timed / 1000000)) ms (diag stall_ns $((diagstall / 1000000)) ms)"
    checkj "$t1.json" 's["cupti_dropped"] == 0 and s["gpu_kernels"] >= 200' \
        "no record dropped, every kernel seen ($(jq_ "$t1.json" 's["gpu_kernels"]') kernels)"
fi

# --- 2: overhead, CUPTI on against off ---
t2=$out/t2
: >"$t2.txt"
for k in 1 2 3; do
    for c in off on; do
        PINCACHE_CUPTI=$c PINCACHE_REPORT=$t2.$c.$k.json LD_PRELOAD=$lib timeout -k 5 60 \
            "$out/gpu_cupti" --batches 3000 --kernel-us 0 --size-kb 1024 >"$t2.$c.out" 2>>"$t2.err"
        echo "$c $(result ms_per_batch "$t2.$c.out")" >>"$t2.txt"
    done
done
# The comparison means something only if the "on" runs collected a timeline
# and the "off" runs did not.
on_ok=1
for k in 1 2 3; do
    [ "$(jq_ "$t2.on.$k.json" 's["cupti_enabled"] == 1 and s["gpu_kernels"] >= 3000 and s["cupti_dropped"] == 0')" = True ] &&
        [ "$(jq_ "$t2.off.$k.json" 's["cupti_enabled"] == 0 and s["gpu_kernels"] == 0')" = True ] || on_ok=0
done
ratio=$(python3 - "$t2.txt" <<'EOF'
import sys, statistics
v = {"on": [], "off": []}
for line in open(sys.argv[1]):
    k, _, x = line.partition(" ")
    if x.strip():
        v[k].append(float(x))
if len(v["on"]) < 3 or len(v["off"]) < 3:
    print("nan")
else:
    print("%.4f %.4f %.4f" % (statistics.median(v["off"]), statistics.median(v["on"]),
                              statistics.median(v["on"]) / statistics.median(v["off"])))
EOF
)
set -- $ratio
if [ "$#" -ne 3 ]; then
    notok "overhead runs completed"
    diag <"$t2.err"
else
    ok "overhead runs completed: churn 1 MiB, ms/batch CUPTI off $1, on $2"
    [ "$on_ok" = 1 ]
    check $? "the CUPTI-on runs recorded every kernel (>= 3000 each, none dropped), the CUPTI-off runs none"
    if python3 -c "import sys; sys.exit(0 if $3 <= 1.03 else 1)"; then
        ok "CUPTI overhead ratio $3 (target <= 1.03)"
    else
        n=$((n + 1)); echo "not ok $n - CUPTI overhead ratio $3 (target <= 1.03) # TODO"
    fi
fi

# --- 3: torch.profiler with pincache loaded ---
if python3 -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' >/dev/null 2>&1; then
    t3=$out/t3
    timeout -k 5 120 python3 "$srcdir/tests/cupti/torch_profile.py" >"$t3.plain.out" 2>"$t3.plain.err"
    prc=$?
    PINCACHE_CUPTI=auto PINCACHE_REPORT=$t3.json PINCACHE_LOG=info LD_PRELOAD=$lib timeout -k 5 120 \
        python3 "$srcdir/tests/cupti/torch_profile.py" >"$t3.shim.out" 2>"$t3.shim.err"
    src=$?
    kp=$(sed -n 's/^KERNELS //p' "$t3.plain.out")
    ks=$(sed -n 's/^KERNELS //p' "$t3.shim.out")
    grep -i 'cupti\|kineto' "$t3.shim.err" | head -n 20 | diag
    [ "$prc" -eq 0 ] && [ "$src" -eq 0 ] && [ -n "$kp" ] && [ "$kp" -gt 0 ] && [ "$kp" = "$ks" ]
    check $? "torch.profiler saw the same GPU events with pincache ($ks) as without ($kp)"
    if [ -f "$t3.json" ]; then
        how=$(jq_ "$t3.json" '"handed over" if s["cupti_handed_over"] else "never taken" if not s["cupti_enabled"] else "kept"')
        [ "$how" != kept ]
        check $? "pincache's report: CUPTI $how"
    else
        notok "pincache wrote its report under torch"
        diag <"$t3.shim.err"
    fi
else
    n=$((n + 1)); echo "ok $n # SKIP python3 has no torch with CUDA"
fi

# --- 4: compute-sanitizer ---
cs=$(command -v compute-sanitizer 2>/dev/null || true)
[ -n "$cs" ] || [ ! -x "${CUDA_HOME:-/usr/local/cuda}/bin/compute-sanitizer" ] ||
    cs=${CUDA_HOME:-/usr/local/cuda}/bin/compute-sanitizer
if [ -n "$cs" ]; then
    t4=$out/t4
    rm -f "$t4.json"
    # pincache goes in front of whatever LD_PRELOAD the sanitizer gives its target.
    PINCACHE_CUPTI=auto PINCACHE_REPORT=$t4.json timeout -k 5 120 "$cs" --tool memcheck \
        --error-exitcode 9 sh -c 'LD_PRELOAD="$0${LD_PRELOAD:+ $LD_PRELOAD}" exec "$@"' "$lib" \
        "$out/gpu_cupti" --batches 20 --kernel-us 200 --size-kb 64 >"$t4.out" 2>&1
    rc=$?
    tail -n 5 "$t4.out" | diag
    [ "$rc" -eq 0 ] && grep -q 'RESULT' "$t4.out" && grep -q 'ERROR SUMMARY: 0 errors' "$t4.out"
    check $? "under compute-sanitizer memcheck the program completes with 0 errors (exit status $rc)"
    if [ -f "$t4.json" ]; then
        checkj "$t4.json" 's["cupti_enabled"] == 0' \
            "pincache left CUPTI to the sanitizer ($(jq_ "$t4.json" '"declined" if s["cupti_declined"] else "unavailable" if s["cupti_unavailable"] else "enabled"'))"
    else
        notok "pincache wrote its report under compute-sanitizer"
    fi
else
    n=$((n + 1)); echo "ok $n # SKIP compute-sanitizer not installed"
fi

echo "1..$n"
[ "$nfail" -eq 0 ]
