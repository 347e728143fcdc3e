#!/usr/bin/env bash
# run-gpu.sh BUILDDIR - pincache on programs that do not link a shared
# libcudart, on a real GPU; TAP and a markdown table on stdout.  Not part of
# make check (CI has no GPU).  No CUDA device: "1..0 # SKIP".  Well under
# 150 s on an H200.  Logs and reports stay in BUILDDIR/tests/driver/gpu-run/.
#
#  1  tests/bench/churn.cu built with plain nvcc (static cudart, the default;
#     checked with ldd): plain, shimmed and twobuf at 1/8/64 MB, next to the
#     shared build's plain and shimmed runs; per size, the shim served the
#     static build's allocations from the cache (report alloc_hits) and its
#     shimmed batches take at most 1.25 x the shared build's shimmed ones
#     (where they do not, both run once more and each side's faster counts)
#  2  tests/gpu/gpu_integrity.cu built static: plain and shimmed runs of
#     both phases have 0 mismatches; with PINCACHE_TEST_NO_FENCES=1 the
#     shimmed run sees corruption (the expected failure)
#  3  Numba: a cuda.pinned_array churn (driver API through Numba's
#     bindings) is served from the cache and gives the same sums
#  4  CuPy: a smoke run gives the same checksum with and without pincache
#  5  the driver-API copy programs of make check (drv_copy, drv_copy2,
#     drv_batch: libcuda.so.1 through cuGetProcAddress, as a static cudart
#     reaches it) built with cc against the real driver: every point passes
#     plain and under the shim (drv_copy staged too), and the reports count
#     what the simulated device's runs count (drvcopy.sh, drvcopy2.sh,
#     drvbatch.sh)
# 3 and 4 skip when python3 lacks numba or cupy.
set -u
unset LD_PRELOAD PINCACHE_MODE PINCACHE_REPORT PINCACHE_TEST_NO_FENCES

srcdir=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=tests/gpu/cuda-env.sh
. "$srcdir/tests/gpu/cuda-env.sh"
pc_gpu_start driver "${1:-.}"
# shellcheck source=tests/gpu/tap.sh
. "$srcdir/tests/gpu/tap.sh"

# plain nvcc: static cudart (no -cudart flag), as most CUDA programs build
static_build() { # OUT SRC
    local cmd=("$PC_NVCC" -O2 -arch="$PC_ARCH" -Xcompiler -pthread -o "$1" "$2")
    echo "${cmd[*]}"
    "${cmd[@]}"
}
field() { sed -n "s/^RESULT .* $2=\([^ ]*\).*/\1/p" "$out/$1.out" 2>/dev/null | head -n 1; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "" || b == "" || b + 0 == 0) print ""; else printf "%.2f\n", a / b }'; }
# within A B: A and B measured and A at most 1.25 x B
within() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a != "" && b != "" && a <= 1.25 * b) }'; }
lesser() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "") print b; else if (b == "" || a + 0 <= b + 0) print a; else print b }'; }
shimenv() { echo LD_PRELOAD="$lib" PINCACHE_MODE=cache PINCACHE_REPORT="$out/$1.json"; }

# ---- 1. churn: static build against the shared one
{
    static_build "$out/churn_static" "$srcdir/tests/bench/churn.cu" &&
    pc_build "$out/churn_shared" "$srcdir/tests/bench/churn.cu"
} >"$out/build-churn.log" 2>&1
built=$?
if [ "$built" != 0 ]; then
    notok "churn: build failed"
    sed 's/^/# /' "$out/build-churn.log" | tail -20
else
    ! ldd "$out/churn_static" | grep -q libcudart
    check $? "churn built with plain nvcc links cudart statically"
    table=()
    for s in 1 8 64; do
        args=(--size "$s" --reps 3 --target-ms 200)
        run "static.plain.$s" 40 "$out/churn_static" --variant churn "${args[@]}"
        # shellcheck disable=SC2046
        run "static.shim.$s" 40 $(shimenv "static.shim.$s") "$out/churn_static" --variant churn "${args[@]}"
        run "static.twobuf.$s" 40 "$out/churn_static" --variant twobuf "${args[@]}"
        run "shared.plain.$s" 40 "$out/churn_shared" --variant churn "${args[@]}"
        # shellcheck disable=SC2046
        run "shared.shim.$s" 40 $(shimenv "shared.shim.$s") "$out/churn_shared" --variant churn "${args[@]}"
        pl=$(field "static.plain.$s" ms_per_batch)
        sh=$(field "static.shim.$s" ms_per_batch)
        tb=$(field "static.twobuf.$s" ms_per_batch)
        spl=$(field "shared.plain.$s" ms_per_batch)
        ssh=$(field "shared.shim.$s" ms_per_batch)
        sp=$(ratio "$pl" "$sh")
        ssp=$(ratio "$spl" "$ssh")
        hits=$(jnum "$out/static.shim.$s.json" stats.alloc_hits)
        calls=$(jnum "$out/static.shim.$s.json" stats.alloc_calls)
        [ -n "$hits" ] && [ -n "$calls" ] && [ "$calls" -gt 0 ] && [ $((hits * 2)) -gt "$calls" ]
        check $? "churn static $s MB: the shim served the allocations from the cache (${hits:-?} hits of ${calls:-?})"
        # Compared under the shim, not as speedups: the plain runs' real
        # calls vary more than the shim does (H200 run 9: a static plain 1 MB
        # run's repetitions took 0.95-1.41 ms per batch).
        if ! within "$sh" "$ssh"; then
            # Once more, both: on some hosts the copy rate moves from one
            # run to the next (an H100's static 64 MB shimmed run came out
            # over 1.25x the shared one's in one run and not in the next);
            # each side's faster run is compared, so a build that is slower
            # every time still fails.
            # shellcheck disable=SC2046
            run "static.shim.$s.again" 40 $(shimenv "static.shim.$s.again") "$out/churn_static" --variant churn "${args[@]}"
            # shellcheck disable=SC2046
            run "shared.shim.$s.again" 40 $(shimenv "shared.shim.$s.again") "$out/churn_shared" --variant churn "${args[@]}"
            sh=$(lesser "$sh" "$(field "static.shim.$s.again" ms_per_batch)")
            ssh=$(lesser "$ssh" "$(field "shared.shim.$s.again" ms_per_batch)")
            sp=$(ratio "$pl" "$sh")
            ssp=$(ratio "$spl" "$ssh")
        fi
        within "$sh" "$ssh"
        check $? "churn static $s MB under the shim: ${sh:-?} ms/batch, at most 1.25 x the shared build's ${ssh:-?} (speedups ${sp:-?}x and ${ssp:-?}x)"
        table+=("| $s MB | ${pl:-fail} | ${sh:-fail} | ${tb:-fail} | ${sp:-n/a} | $(ratio "$tb" "$sh") | ${spl:-fail} | ${ssh:-fail} | ${ssp:-n/a} |")
    done
    echo "# ### Static cudart (plain nvcc): per-batch churn, ms/batch (median of 3)"
    echo "# | size | plain | pincache | twobuf | speedup | twobuf/pincache | shared plain | shared pincache | shared speedup |"
    echo "# |---|---|---|---|---|---|---|---|---|"
    printf '# %s\n' "${table[@]}"
fi

# ---- 2. integrity, static build
if static_build "$out/gpu_integrity_static" "$srcdir/tests/gpu/gpu_integrity.cu" >"$out/build-integrity.log" 2>&1; then
    for phase in churn destroyed; do
        for mode in plain shim; do
            name=integrity.$phase.$mode
            if [ "$mode" = plain ]; then
                run "$name" 60 "$out/gpu_integrity_static" --phase "$phase" --iters 128
            else
                # shellcheck disable=SC2046
                run "$name" 60 $(shimenv "$name") "$out/gpu_integrity_static" --phase "$phase" --iters 128
            fi
            m=$(sed -n 's/^RESULT integrity .* mismatches=\([0-9][0-9]*\) .*/\1/p' "$out/$name.out")
            [ "$rc" = 0 ] && [ "${m:-x}" = 0 ]
            check $? "integrity static $phase [$mode]: ${m:-no result} mismatches (exit $rc)"
        done
    done
    hits=$(jnum "$out/integrity.churn.shim.json" stats.alloc_hits)
    [ "${hits:-0}" -gt 0 ]
    check $? "integrity static: the shim served its allocations (${hits:-0} hits)"
    # shellcheck disable=SC2046
    run integrity.nofence 60 $(shimenv integrity.nofence) PINCACHE_TEST_NO_FENCES=1 \
        "$out/gpu_integrity_static" --phase churn --iters 128
    m=$(sed -n 's/^RESULT integrity .* mismatches=\([0-9][0-9]*\) .*/\1/p' "$out/integrity.nofence.out")
    [ "${m:-0}" -gt 0 ]
    check $? "integrity static, fences off: corruption seen (expected): ${m:-no result} mismatches"
else
    notok "integrity: static build failed"
    sed 's/^/# /' "$out/build-integrity.log" | tail -20
fi

# ---- 3. Numba pinned_array churn
if python3 -c 'import numba.cuda, numpy; assert numba.cuda.is_available()' >/dev/null 2>&1; then
    run numba.plain 60 python3 "$srcdir/tests/driver/numba_churn.py"
    # shellcheck disable=SC2046
    run numba.shim 60 $(shimenv numba.shim) python3 "$srcdir/tests/driver/numba_churn.py"
    a=$(sed -n 's/^checksum //p' "$out/numba.plain.out")
    b=$(sed -n 's/^checksum //p' "$out/numba.shim.out")
    [ -n "$a" ] && [ "$a" = "$b" ]
    check $? "numba: same sums with and without pincache (${a:-none} / ${b:-none})"
    hits=$(jnum "$out/numba.shim.json" stats.alloc_hits)
    calls=$(jnum "$out/numba.shim.json" stats.alloc_calls)
    [ -n "$hits" ] && [ "$hits" -gt 100 ]
    check $? "numba: cuda.pinned_array served from the cache (${hits:-?} hits of ${calls:-?})"
else
    skip "numba with CUDA not available"
    skip "numba with CUDA not available"
fi

# ---- 4. CuPy smoke
if python3 -c 'import cupy; cupy.cuda.runtime.getDeviceCount()' >/dev/null 2>&1; then
    run cupy.plain 60 python3 "$srcdir/tests/driver/cupy_smoke.py"
    # shellcheck disable=SC2046
    run cupy.shim 60 $(shimenv cupy.shim) python3 "$srcdir/tests/driver/cupy_smoke.py"
    a=$(sed -n 's/^checksum //p' "$out/cupy.plain.out")
    b=$(sed -n 's/^checksum //p' "$out/cupy.shim.out")
    [ -n "$a" ] && [ "$a" = "$b" ]
    check $? "cupy: same checksum with and without pincache (${a:-none} / ${b:-none})"
    calls=$(jnum "$out/cupy.shim.json" stats.alloc_calls)
    echo "# cupy: pincache saw ${calls:-?} pinned allocations, $(jnum "$out/cupy.shim.json" stats.alloc_hits) hits"
else
    skip "cupy not available"
fi
# ---- 5. the driver-API copy programs against the real driver
# tapok NAME: the run exited 0 and printed no "not ok"
tapok() { [ "$rc" = 0 ] && ! grep -q '^not ok' "$out/$1.out" && grep -q '^1\.\.' "$out/$1.out"; }
for p in drv_copy drv_copy2 drv_batch; do
    if cc -O2 -std=gnu11 -I"$srcdir/tests" -I"$(dirname "$(dirname "$PC_NVCC")")/include" -o "$out/$p" "$srcdir/tests/driver/$p.c" -ldl \
        >"$out/build-$p.log" 2>&1; then
        run "$p.plain" 60 "$out/$p"
        tapok "$p.plain"
        check $? "$p plain: $(grep -c '^ok' "$out/$p.plain.out") points pass (exit $rc)"
        # shellcheck disable=SC2046
        run "$p.shim" 60 $(shimenv "$p.shim") PINCACHE_LIB_EXPECTED=1 "$out/$p"
        tapok "$p.shim"
        check $? "$p under the shim: $(grep -c '^ok' "$out/$p.shim.out") points pass (exit $rc)"
        grep '^not ok' "$out/$p.plain.out" "$out/$p.shim.out" | head -n 5 | sed 's/^/# /'
    else
        notok "$p: cc failed"
        sed 's/^/# /' "$out/build-$p.log" | head -n 5
    fi
done
# shellcheck disable=SC2046
run drv_copy.staged 60 $(shimenv drv_copy.staged) PINCACHE_LIB_EXPECTED=1 PINCACHE_STAGE_MIN=32K PINCACHE_STAGE_FRESH_MIN=0 "$out/drv_copy"
tapok drv_copy.staged
check $? "drv_copy staged (PINCACHE_STAGE_MIN=32K PINCACHE_STAGE_FRESH_MIN=0): $(grep -c '^ok' "$out/drv_copy.staged.out") points pass"
c=$(jnum "$out/drv_copy.shim.json" stats.memcpy_calls)
[ "$c" = 16 ]
check $? "drv_copy: the report counts its 16 copies (${c:-none})"
a=$(jnum "$out/drv_copy.staged.json" stats.stage_h2d_calls)
b=$(jnum "$out/drv_copy.staged.json" stats.stage_d2h_calls)
[ "$a" = 4 ] && [ "$b" = 4 ]
check $? "drv_copy staged: 4 H2D and 4 D2H staged, as on the simulated device (${a:-none}, ${b:-none})"
c=$(jnum "$out/drv_copy2.shim.json" stats.memcpy_calls)
o=$(jnum "$out/drv_copy2.shim.json" apis.cudaMemcpyOther.calls)
[ "$c" = 27 ] && [ "$o" = 19 ]
check $? "drv_copy2: 27 copies counted, 19 of them other shapes (${c:-none}, ${o:-none})"
a=$(jnum "$out/drv_batch.shim.json" apis.cudaMemcpyBatchAsync.calls)
b=$(jnum "$out/drv_batch.shim.json" apis.cudaMemcpy3DBatchAsync.calls)
c=$(jnum "$out/drv_batch.shim.json" stats.memcpy_calls)
[ "$a" = 5 ] && [ "$b" = 5 ] && [ "$c" = 24 ]
check $? "drv_batch: 5 1D and 5 3D batches, their copies counted as on the simulated device (${a:-none}, ${b:-none}, ${c:-none} of 24)"
echo "1..$n"
