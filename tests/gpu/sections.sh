# sections.sh - sourced (bash) by scripts/gpu-check.sh (make check-gpu) and
# scripts/h200.sh: the real-GPU sections, one list for both, each run the
# same way by both.
#
#   PC_GPU_SECTIONS     every section, in the order they run
#   PC_GPU_CHECKS       the sections make check-gpu runs: all but bench,
#                       which measures and checks nothing (make bench),
#                       cold, issue 18's benchmark (tests/bench/coldalloc.sh),
#                       and speed, issue 19's (tests/bench/synctax.sh,
#                       xover.sh, cuptitax.sh, nodeshare.sh)
#   pc_gpu_section NAME run one: its header, then the last lines of its
#                       output (all of it in $pc_gpu_file); returns its exit
#                       status, 77 when it cannot run here (no torch, or a
#                       tree without that section's script)
#
# Needs srcdir (the source tree), builddir (a build of it), out (where each
# section's TAP or report goes, under the names h200.sh has always used) and
# work (a folder for their logs, which h200.sh packs).
# shellcheck shell=bash

PC_GPU_SECTIONS="suite fuzz stage bench cold speed cupti driver sim smoke torch"
PC_GPU_CHECKS=${PC_GPU_SECTIONS/ bench cold speed/}

# pc_gpu_tee FILE LINES: stdin into FILE, its last LINES lines (all: "all")
# on stdout
pc_gpu_tee() {
    if [ "$2" = all ]; then tee "$1"; else tee "$1" | tail -n "$2"; fi
}

# pc_gpu_folder FOLDER SECONDS LINES HEADER: tests/FOLDER/run-gpu.sh, its
# TAP in $out/FOLDER.tap, its logs (tests/FOLDER/gpu-run) in $work/FOLDERlogs
pc_gpu_folder() {
    local rc
    pc_gpu_file=$out/$1.tap
    [ -f "$srcdir/tests/$1/run-gpu.sh" ] || return 77
    echo "== $4"
    timeout "$2" bash "$srcdir/tests/$1/run-gpu.sh" "$builddir" 2>&1 | pc_gpu_tee "$pc_gpu_file" "$3"
    rc=${PIPESTATUS[0]}
    cp -r "$builddir/tests/$1/gpu-run" "$work/$1logs" 2>/dev/null
    return "$rc"
}

# pc_gpu_bench NAME FILE LOGS SECONDS HEADER: tests/bench/NAME.sh BUILDDIR
# $work/LOGS, its markdown report whole in $out/FILE; its progress, runs and
# pincache's reports in $work/LOGS (the last progress lines shown when it
# could not measure)
pc_gpu_bench() {
    local rc
    pc_gpu_file=$out/$2
    [ -f "$srcdir/tests/bench/$1.sh" ] || return 77
    echo "== $5"
    mkdir -p "$work/$3"
    timeout "$4" bash "$srcdir/tests/bench/$1.sh" "$builddir" "$work/$3" \
        2>"$work/$3/progress.log" | pc_gpu_tee "$pc_gpu_file" all
    rc=${PIPESTATUS[0]}
    [ "$rc" -le 1 ] || tail -n 20 "$work/$3/progress.log"
    return "$rc"
}

pc_gpu_section() {
    local rc=0 first=${PINCACHE_FUZZ_FIRST:-1} a b
    case $1 in
    suite)
        echo "== GPU suite"
        pc_gpu_file=$out/gpu-suite.tap
        PINCACHE_GPU_LOGDIR=$work/gpulogs timeout 300 bash "$srcdir/scripts/gpu-suite.sh" "$builddir" 2>&1 |
            pc_gpu_tee "$pc_gpu_file" 40
        rc=${PIPESTATUS[0]} ;;
    fuzz)
        pc_gpu_file=$out/fuzz-$first.tap
        [ -f "$srcdir/tests/fuzz/run-gpu.sh" ] || return 77
        echo "== differential fuzzer: ${PINCACHE_FUZZ_SEEDS:-1000} seeds from $first, plain against every mode"
        # Batches of 40 seeds (about 105 s on the H200 in run 73, whose
        # one batch of 100 took 263 s): the budget stops between batches.
        FUZZ_BATCH=${FUZZ_BATCH:-40} FUZZ_TIMEOUT=${FUZZ_TIMEOUT:-150} FUZZ_BUDGET=$(( ${PINCACHE_FUZZ_LIMIT:-400} - 30 )) \
            timeout "${PINCACHE_FUZZ_LIMIT:-400}" bash "$srcdir/tests/fuzz/run-gpu.sh" "$builddir" \
            "${PINCACHE_FUZZ_SEEDS:-1000}" "$first" 2>&1 | pc_gpu_tee "$pc_gpu_file" 30
        rc=${PIPESTATUS[0]}
        cp -r "$builddir/tests/fuzz/gpu-cases" "$work/fuzzcases" 2>/dev/null ;;
    stage)
        pc_gpu_file=$out/stage.txt
        [ -f "$srcdir/tests/stage/run-gpu.sh" ] || return 77
        echo "== staging suite and benchmark"
        timeout 150 sh "$srcdir/tests/stage/run-gpu.sh" "$builddir" 2>&1 | pc_gpu_tee "$pc_gpu_file" 40
        rc=${PIPESTATUS[0]} ;;
    bench)
        echo "== benchmarks"
        pc_gpu_file=$out/bench.md
        PINCACHE_BENCH_LOGDIR=$work/benchlogs timeout 280 bash "$srcdir/scripts/bench.sh" "$builddir" 2>&1 |
            pc_gpu_tee "$pc_gpu_file" 60
        rc=${PIPESTATUS[0]} ;;
    cold)
        # about 3 minutes on an H200 (varsize in three rounds since 2026-12-05)
        pc_gpu_bench coldalloc coldalloc.md coldlogs 420 \
            "cold allocations, copy rates of the blocks, varsize (issue 18)"
        rc=$? ;;
    speed)
        # issue 19's side-by-side benchmarks, about 7 minutes on an H200:
        # their reports one after the other in speed.md, their runs in
        # $work/speedlogs/NAME; PINCACHE_SPEED picks some of them
        # (cuptitax's 45 processes took 7 minutes in run 72: 540 s for it)
        for a in ${PINCACHE_SPEED:-synctax xover cuptitax nodeshare}; do
            lim=400
            [ "$a" = cuptitax ] && lim=540
            pc_gpu_bench "$a" "speed-$a.md" "speedlogs/$a" "$lim" "issue 19: tests/bench/$a.sh"
            b=$?
            [ "$b" = 0 ] || [ "$b" = 77 ] || rc=1
        done
        cat "$out/speed-synctax.md" "$out/speed-xover.md" "$out/speed-cuptitax.md" "$out/speed-nodeshare.md" \
            >"$out/speed.md" 2>/dev/null
        rm -f "$out"/speed-*.md
        pc_gpu_file=$out/speed.md ;;
    cupti)
        pc_gpu_folder cupti 200 30 "CUPTI timeline"
        rc=$? ;;
    driver)
        pc_gpu_folder driver 200 40 "static cudart, driver API, Numba, CuPy (tests/driver)"
        rc=$? ;;
    sim)
        pc_gpu_folder sim 300 40 "make check's tests/sim programs on the real runtime: fastobs and ownmem plain, PINCACHE_FAST_ALLOC=off and on"
        rc=$? ;;
    smoke)
        # the same checksum plainly and under the shim
        pc_gpu_file=$work/torch.txt
        python3 -c 'import torch' 2>/dev/null || return 77
        echo "== PyTorch smoke"
        {
            python3 "$srcdir/tests/gpu/torch_smoke.py"
            PINCACHE_REPORT=stderr LD_PRELOAD="$builddir/src/.libs/libpincache.so" \
                python3 "$srcdir/tests/gpu/torch_smoke.py"
        } >"$pc_gpu_file" 2>&1
        cat "$pc_gpu_file"
        grep -q '^1\.\.0 # SKIP' "$pc_gpu_file" && return 77
        a=$(grep -m1 checksum "$pc_gpu_file" | awk '{print $2}')
        b=$(grep checksum "$pc_gpu_file" | sed -n 2p | awk '{print $2}')
        if [ -n "$a" ] && [ "$a" = "$b" ]; then
            echo "torch: checksums identical"
        else
            echo "torch: CHECKSUMS DIFFER"
            rc=1
        fi ;;
    torch)
        pc_gpu_folder torch 300 all "PyTorch jobs: seeds' experiment, DataLoader, profiler, torchrun (tests/torch)"
        rc=$? ;;
    *)
        echo "pc_gpu_section: no section $1" >&2
        return 2 ;;
    esac
    return "$rc"
}
