#!/usr/bin/env bash
# h200-forkdiag.sh OUTDIR - on the GPU machine, from the repository root with
# the dist tarball and headers in .gpu/ (see h200.sh): which part of pincache
# makes a fork() child that leaves through exit() crash under torch
# (docs/runs.md, run 4)?  Each line: the child's exit status plainly and
# under each setting, for four kinds of CUDA use before the fork (1: a
# device tensor; 2: and a pinned one; 3: and an async copy from it; 4: 2 and
# a query of the per-thread default stream, which creates it).  Then
# the native backtrace of a crashing child (dev/segvtrace.c), with
# pincache's frames resolved by addr2line.
set -u
out=$1; repo=$PWD
work=/tmp/fd; rm -rf $work; mkdir -p $work; tar -C $work -xzf .gpu/pincache-0.1.0.tar.gz
cd $work/pincache-0.1.0 || exit 1
{ ./configure CPPFLAGS=-I$repo/.gpu/include --without-jansson && make -j16; } >$out/fdbuild.log 2>&1 || { tail -20 $out/fdbuild.log; exit 1; }
lib=$PWD/src/.libs/libpincache.so
gcc -shared -fPIC -g -O1 -o $work/segvtrace.so $repo/dev/segvtrace.c || exit 1
cat > f.py <<'PY'
import os, sys, torch
level = int(sys.argv[1])
x = torch.ones(1 << 20).cuda()
if level >= 2:
    p = torch.ones(1 << 20).pin_memory()
if level == 3:
    y = p.cuda(non_blocking=True)
if level == 4:
    # What pincache used to do: ask about the per-thread default stream,
    # which brings it into being.
    import ctypes
    rt = [l.split()[-1] for l in open("/proc/self/maps") if "libcudart.so" in l][0]
    ctypes.CDLL(rt).cudaStreamQuery(ctypes.c_void_p(2))
torch.cuda.synchronize()
sys.stdout.flush()
pid = os.fork()
if pid == 0:
    raise SystemExit(0)
_, st = os.waitpid(pid, 0)
print("child", os.waitstatus_to_exitcode(st))
PY
mkdir -p $out/segv
for v in plain PINCACHE_MODE=off PINCACHE_MODE=observe PINCACHE_STAGE=off PINCACHE_MODE=cache; do
    line="[$v]"
    for level in 1 2 3 4; do
        if [ $v = plain ]; then
            a=$(timeout 40 python3 f.py $level 2>&1 | tail -1)
        else
            a=$(env $v PINCACHE_REPORT=off SEGVTRACE_DIR=$out/segv LD_PRELOAD="$work/segvtrace.so $lib" \
                timeout 40 python3 f.py $level 2>$out/segv/$v.$level.err | tail -1)
        fi
        line="$line f.py $level: $a |"
    done
    echo "$line"
done
for e in $out/segv/*.err; do
    grep -q SEGVTRACE "$e" || continue
    echo "== $(basename $e)"
    grep -A40 SEGVTRACE "$e" | head -45
    grep -o 'libpincache.so[^(]*(+0x[0-9a-f]*)' "$e" | sed 's/.*(+\(0x[0-9a-f]*\))/\1/' |
        while read -r off; do echo "  $off: $(addr2line -f -C -e $lib $off | tr '\n' ' ')"; done
    break
done
