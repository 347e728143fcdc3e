#!/usr/bin/env bash
# gpu-check.sh [BUILDDIR] - make check-gpu: every real-GPU test section of
# tests/gpu/sections.sh (the ones scripts/h200.sh runs, bench aside) against
# BUILDDIR's libpincache.so, one after the other, as h200.sh runs them.  Each
# section's TAP goes to BUILDDIR/tests/gpu/check-gpu/ (its logs under
# work/ there); then one line a section, PASS, FAIL or SKIP.  Exit status 1
# when a section failed.  No CUDA device: every section SKIPs.
# PINCACHE_GPU_CHECKS picks sections (default: all of $PC_GPU_CHECKS).
set -u
unset LD_PRELOAD

srcdir=$(cd "$(dirname "$0")/.." && pwd)
if ! builddir=$(cd "${1:-${top_builddir:-.}}" 2>/dev/null && pwd); then
    echo "gpu-check.sh: no build folder ${1:-.}" >&2
    exit 1
fi
out=$builddir/tests/gpu/check-gpu
work=$out/work
rm -rf "$out" && mkdir -p "$work" || exit 1
# shellcheck source=tests/gpu/sections.sh
. "$srcdir/tests/gpu/sections.sh"

# verdict RC FILE: PASS, FAIL or SKIP for a section that ended with RC and
# wrote FILE
verdict() {
    if [ "$1" = 77 ] || { [ -f "$2" ] && grep -q '^1\.\.0 # SKIP' "$2"; }; then
        echo SKIP
    elif [ "$1" = 0 ] && [ -f "$2" ] && ! grep -q '^Bail out!' "$2" &&
         ! grep -v '# TODO' "$2" | grep -q '^not ok'; then
        echo PASS
    else
        echo FAIL
    fi
}

summary=() failed=0
for s in ${PINCACHE_GPU_CHECKS:-$PC_GPU_CHECKS}; do
    pc_gpu_file=
    pc_gpu_section "$s"
    rc=$?
    v=$(verdict "$rc" "$pc_gpu_file")
    [ "$v" = FAIL ] && failed=1
    why=
    [ "$rc" = 77 ] && why=" (not available here)"
    [ "$v" = SKIP ] && [ -f "$pc_gpu_file" ] &&
        why=" ($(sed -n 's/^1\.\.0 # SKIP *//p' "$pc_gpu_file" | head -n 1))"
    [ -f "$pc_gpu_file" ] && why="$why, $pc_gpu_file"
    summary+=("$v: $s$why")
done
echo "== make check-gpu"
printf '%s\n' "${summary[@]}"
exit "$failed"
