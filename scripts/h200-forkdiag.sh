#!/usr/bin/env bash
# h200-forkdiag.sh OUTDIR - on the GPU machine, from the repository root with
# the dist tarball and headers in .gpu/ (see h200.sh): which part of pincache
# makes a fork() child that leaves through exit() crash under torch
# (docs/benchmarks.md, run 4)?  Each line: the child exit status plain and
# under each setting; then a gdb backtrace of the child if gdb is there.
# Not yet run on a GPU.
set -u
out=$1; repo=$PWD
work=/tmp/fd; rm -rf $work; mkdir -p $work; tar -C $work -xzf .gpu/pincache-0.1.0.tar.gz
cd $work/pincache-0.1.0 || exit 1
{ ./configure CPPFLAGS=-I$repo/.gpu/include --without-jansson && make -j16; } >$out/fdbuild.log 2>&1 || { tail -20 $out/fdbuild.log; exit 1; }
lib=$PWD/src/.libs/libpincache.so
cat > f.py <<'PY'
import os, sys, torch
x = torch.ones(1 << 20).cuda()
p = torch.ones(1 << 20).pin_memory()
y = p.cuda(non_blocking=True)
torch.cuda.synchronize()
sys.stdout.flush()
pid = os.fork()
if pid == 0:
    raise SystemExit(0)
_, st = os.waitpid(pid, 0)
print("child", os.waitstatus_to_exitcode(st))
PY
for v in plain PINCACHE_MODE=off PINCACHE_MODE=observe PINCACHE_STAGE=off PINCACHE_MODE=cache; do
    if [ $v = plain ]; then
        a=$(timeout 40 python3 f.py 2>&1 | tail -1)
        b=$(timeout 40 python3 tests/torch/train.py --pin 1 --epochs 1 --steps 10 2>/dev/null | tail -1 | grep -o 'child_status=[^ ]*')
    else
        a=$(env $v PINCACHE_REPORT=off LD_PRELOAD=$lib timeout 40 python3 f.py 2>&1 | tail -1)
        b=$(env $v PINCACHE_REPORT=off LD_PRELOAD=$lib timeout 40 python3 tests/torch/train.py --pin 1 --epochs 1 --steps 10 2>/dev/null | tail -1 | grep -o 'child_status=[^ ]*')
    fi
    echo "[$v] f.py: $a | train: $b"
done
if command -v gdb >/dev/null; then
    timeout 60 gdb -q -batch -ex 'set follow-fork-mode child' -ex run -ex bt \
        --args env PINCACHE_REPORT=off LD_PRELOAD=$lib python3 f.py 2>&1 | grep -v '^\[' | tail -30
else
    echo "no gdb"
fi
