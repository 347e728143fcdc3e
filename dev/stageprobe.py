"""stageprobe.py - the seeds' pageable variants alone, for comparing staging
settings (dev/h200-stageprobe.sh runs it plainly and under pincache
with each setting).

    a = torch.rand(512, 655360)
    for i in a: i.cuda()                     # pageable
    for i in a: i.cuda(non_blocking=True)    # pageable_nb

Each variant: one warm-up pass, then three timed passes (each ending with
torch.cuda.synchronize()).  Prints one line:
    pageable=MEDIAN(MIN..MAX) pageable_nb=MEDIAN(MIN..MAX)   (ms per pass)
"""
import os
import sys

import torch

# seeds.py is tests/torch's.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "torch"))
from seeds import COLS, VARIANTS, timed  # noqa: E402

a = torch.rand(512, COLS)
torch.ones(1).cuda()
torch.cuda.synchronize()

res = {}
for name, fn in VARIANTS:
    if not name.startswith("pageable"):
        continue
    timed(a, fn)
    res[name] = sorted(timed(a, fn) for _ in range(3))
print(" ".join("%s=%.1f(%.1f..%.1f)" % (k, v[1], v[0], v[2]) for k, v in res.items()))
