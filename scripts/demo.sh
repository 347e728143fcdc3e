#!/bin/sh
# The churn demo, before and after pincache, from a fresh clone.
# Sets up and builds (scripts/setup.sh), then:
#  - with a CUDA GPU and nvcc: the real churn benchmark (scripts/bench.sh --churn);
#  - without: the same loop on the simulated device from the test suite, with
#    costs taken from the H200 measurements (cudaHostAlloc 0.53 ms + 0.3 ms/MB,
#    cudaFreeHost waiting for the device, copies at 55 GB/s).
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
"$top/scripts/setup.sh"
b=$top/_build/plain
lib=$b/src/.libs/libpincache.so

if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
    exec "$top/scripts/bench.sh" "$b"
fi

echo "== no CUDA GPU here: running the churn demo on the simulated device"
(cd "$b" && make -s tests/demo/churn_sim)
SIM_ALLOC_US=530 SIM_ALLOC_US_PER_MB=300 SIM_FREE_US=230 SIM_FREE_US_PER_MB=100 SIM_COPY_GBPS=55
export SIM_ALLOC_US SIM_ALLOC_US_PER_MB SIM_FREE_US SIM_FREE_US_PER_MB SIM_COPY_GBPS
printf '%-6s | %-14s | %-16s | %-16s | %s\n' size "plain churn" "churn+pincache" "hand-optimized" "speedup"
for mb in 1 8 64; do
    case $mb in 1) n=400 k=50 ;; 8) n=120 k=400 ;; *) n=30 k=3000 ;; esac
    plain=$("$b/tests/demo/churn_sim" churn $mb $n $k | awk '{print $(NF-1)}')
    shim=$(LD_PRELOAD=$lib PINCACHE_REPORT=off "$b/tests/demo/churn_sim" churn $mb $n $k | awk '{print $(NF-1)}')
    two=$("$b/tests/demo/churn_sim" twobuf $mb $n $k | awk '{print $(NF-1)}')
    printf '%-6s | %10s ms | %12s ms | %12s ms | %.1fx (hand-optimized/pincache %.2f)\n' "${mb}MB" \
        "$plain" "$shim" "$two" "$(echo "$plain $shim" | awk '{print $1/$2}')" "$(echo "$two $shim" | awk '{print $1/$2}')"
done
echo
echo "== the report pincache writes at exit (8 MB run):"
LD_PRELOAD=$lib "$b/tests/demo/churn_sim" churn 8 120 400 >/dev/null
