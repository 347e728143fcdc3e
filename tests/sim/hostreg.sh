#!/bin/sh
# hostreg: registration's own costs against cudaHostAlloc's and
# cudaFreeHost's, with the H200's alloc and free costs (DESIGN.md and
# tests/doubles/sim_cudart.c: 0.53 ms + 0.43 ms/MB, 0.23 ms + 0.13 ms/MB);
# and the driver's registration calls and pointer queries as the runtime
# hands them out.  Plainly only: under the shim the program gets pincache's
# wrappers for cuMemHostRegister, cuMemHostUnregister and cuMemHostGetFlags,
# which reach the driver through libcuda.so.1, which a real libcudart loads
# and the simulated one does not (they answer 3 here).  See hostreg.c.
. "$top_srcdir/tests/sim/common.sh"

SIM_ALLOC_US=530 SIM_ALLOC_US_PER_MB=430 SIM_FREE_US=230 SIM_FREE_US_PER_MB=130
export SIM_ALLOC_US SIM_ALLOC_US_PER_MB SIM_FREE_US SIM_FREE_US_PER_MB
tap_program "plain" plain "$SIM_BIN/hostreg"
unset SIM_ALLOC_US SIM_ALLOC_US_PER_MB SIM_FREE_US SIM_FREE_US_PER_MB
# Ten times the H200's rate: 168 ms for the faulting registration, where
# this machine's own faulting of 64 MiB took about 25 ms.
SIM_ALLOC_US_PER_MB=4300
export SIM_ALLOC_US_PER_MB
tap_program "plain -f" plain "$SIM_BIN/hostreg" -f
unset SIM_ALLOC_US_PER_MB
tap_program "plain -d" plain "$SIM_BIN/hostreg" -d
tap_done
