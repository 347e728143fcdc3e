# cuda-env.sh - sourced (bash) by scripts/gpu-suite.sh and scripts/bench.sh:
# finds nvcc, checks for a usable device, builds CUDA programs.
# Needs $srcdir (the source tree root).  Sets PC_NVCC, PC_ARCH, PC_RPATH.
# shellcheck shell=bash

: "${srcdir:?cuda-env.sh needs srcdir}"
PC_NVCC=
PC_ARCH=sm_90
PC_RPATH=()

# nvcc from $NVCC, PATH, $CUDA_HOME or /usr/local/cuda.  Returns 1 if none.
pc_find_nvcc() {
    local c
    for c in "${NVCC:-}" "$(command -v nvcc 2>/dev/null)" \
             "${CUDA_HOME:-/usr/local/cuda}/bin/nvcc" /usr/local/cuda/bin/nvcc; do
        if [ -n "$c" ] && [ -x "$c" ]; then
            PC_NVCC=$c
            break
        fi
    done
    [ -n "$PC_NVCC" ] || return 1
    # run without LD_LIBRARY_PATH: point the binaries at the toolkit's libcudart
    local home d
    home=$(cd "$(dirname "$(readlink -f "$PC_NVCC")")/.." && pwd)
    PC_RPATH=()
    for d in "$home/lib64" "$home/lib" "$home/targets/x86_64-linux/lib" \
             "$home/targets/sbsa-linux/lib"; do
        if compgen -G "$d/libcudart.so*" >/dev/null; then
            PC_RPATH+=(-Xlinker -rpath -Xlinker "$d")
        fi
    done
    return 0
}

# pc_build OUT SRC [nvcc flags...]: build unless OUT is newer than SRC and
# gpu_common.cuh and was built by the same command.
pc_build() {
    local out=$1 src=$2
    shift 2
    local cmd=("$PC_NVCC" -O2 -cudart shared -arch="$PC_ARCH" -Xcompiler -pthread
               "${PC_RPATH[@]}" "$@" -o "$out" "$src")
    local hdr=$srcdir/tests/gpu/gpu_common.cuh
    if [ -x "$out" ] && [ "$out" -nt "$src" ] && [ "$out" -nt "$hdr" ] &&
       [ "$(cat "$out.cmd" 2>/dev/null)" = "${cmd[*]}" ]; then
        return 0
    fi
    rm -f "$out" "$out.cmd"
    echo "${cmd[*]}"
    "${cmd[@]}" && printf '%s\n' "${cmd[*]}" >"$out.cmd"
}

# pc_probe_device OUTDIR LOG: 0 = a device runs our kernels (PC_ARCH set),
# 1 = no CUDA device, 2 = a device but we cannot build or run for it.
pc_probe_device() {
    local out=$1 log=$2 rc have_smi=0
    if command -v nvidia-smi >/dev/null 2>&1; then
        nvidia-smi -L >>"$log" 2>&1 || return 1
        have_smi=1
    fi
    if ! pc_find_nvcc; then
        echo "nvcc not found (set NVCC or CUDA_HOME)" >>"$log"
        [ "$have_smi" = 1 ] && return 2
        return 1
    fi
    mkdir -p "$out" || return 2
    for PC_ARCH in sm_90 native; do
        pc_build "$out/gpu_probe" "$srcdir/tests/gpu/gpu_probe.cu" >>"$log" 2>&1 || continue
        timeout -k 5 60 "$out/gpu_probe" >>"$log" 2>&1
        rc=$?
        case $rc in
        0) return 0 ;;
        3) return 1 ;;
        esac
        echo "probe built for $PC_ARCH exited $rc" >>"$log"
    done
    PC_ARCH=sm_90
    [ "$have_smi" = 1 ] && return 2
    return 1
}

# pc_gpu_start NAME [BUILDDIR]: the opening of a GPU TAP script.  Sets
# builddir, lib (the built libpincache.so) and out (BUILDDIR/tests/NAME/
# gpu-run, created), then probes the device: without one the script ends
# with "1..0 # SKIP"; a device it cannot use, a missing build or library
# end it with "Bail out!".
pc_gpu_start() {
    if ! builddir=$(cd "${2:-.}" 2>/dev/null && pwd); then
        echo "Bail out! no build folder ${2:-.}"
        exit 1
    fi
    lib=$builddir/src/.libs/libpincache.so
    out=$builddir/tests/$1/gpu-run
    mkdir -p "$out" || exit 1
    pc_probe_device "$out" "$out/probe.log"
    case $? in
    1) echo "1..0 # SKIP no CUDA device"; exit 0 ;;
    2) echo "Bail out! a CUDA device is present but the probe could not be built or run"
       sed 's/^/# /' "$out/probe.log"; exit 1 ;;
    esac
    [ -f "$lib" ] || { echo "Bail out! $lib not found (build pincache first)"; exit 1; }
}
