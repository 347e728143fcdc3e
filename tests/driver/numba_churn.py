"""numba_churn.py - a Numba cuda.pinned_array churn (driver API through
Numba's bindings): each step pins a fresh array, fills it, copies it to the
device, and drops it (Numba frees it with cuMemFreeHost).  Prints
"checksum N", the same with and without pincache (run-gpu.sh)."""
import numpy as np
from numba import cuda

N = 1 << 20
STEPS = 300
stream = cuda.stream()
dev = cuda.device_array(N, dtype=np.uint8, stream=stream)
total = 0
for i in range(STEPS):
    host = cuda.pinned_array(N, dtype=np.uint8)
    host[:] = i % 251
    dev.copy_to_device(host, stream=stream)
    stream.synchronize()
    total += int(dev[: 1 << 12].copy_to_host(stream=stream).sum())
    del host
print("checksum", total)
