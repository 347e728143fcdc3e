#!/bin/sh
# doctor: pincache doctor on the simulated device.  Without a command: the
# simulated driver found (version, GPU names, context-wide fences; none with
# SIM_DRIVER_VERSION=12040), or "no CUDA driver found" where the loader has
# no libcuda.so.1.  With one: a shared-cudart program (tests/sim/hello), a
# static-cudart one (doctor_static, stripped too; nvcc's own where nvcc
# works), a driver-API one linked (doctor_drv) and one that dlopens the
# driver (drv_churn), each answered from its file without starting it; a
# non-CUDA one (/bin/true) and scripts, started and answered from what they
# load; --timeout stops a program; --no-run starts nothing; a CUDA preload
# in the way; bad input: usage, status 2.
. "$top_srcdir/tests/sim/common.sh"
cli=${PINCACHE_CLI:-$top_builddir/scripts/pincache}
DRV_BIN=$top_builddir/tests/driver
DIAG_BIN=$top_builddir/tests/diag
unset LD_PRELOAD

# has TEXT FILE: FILE has a line with TEXT (fixed string); shown otherwise.
has() {
	if grep -q -F -- "$1" "$2"; then
		return 0
	fi
	sed 's/^/# /' "$2"
	return 1
}

doc() {
	_out=$1
	shift
	run_prog plain "$cli" doctor "$@" >"$SIM_TMP/$_out" 2>"$SIM_TMP/$_out.err"
}

# --- the machine, with the simulated driver on the loader's path
LD_LIBRARY_PATH=$DRV_BIN${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} doc m1
tap_check $? "machine: exit status 0"
has "driver:     libcuda.so.1 at $DRV_BIN/libcuda.so.1, CUDA 13.0 (13000)" "$SIM_TMP/m1"
tap_check $? "machine: the simulated driver, its path and version"
has "GPUs:       1 (0: Simulated H200 (pincache test double))" "$SIM_TMP/m1"
tap_check $? "machine: one GPU and its name"
has "fences:     context-wide" "$SIM_TMP/m1"
tap_check $? "machine: context-wide fences (cuCtxRecordEvent at 12050)"
for k in runtimes memlock "huge pages" CPUs "NUMA nodes" preload pincache; do
	grep -q "^$k: " "$SIM_TMP/m1"
	tap_check $? "machine: a '$k' line"
done
[ ! -s "$SIM_TMP/m1.err" ]
tap_check $? "machine: nothing on stderr"
SIM_DEVICES=2 SIM_DRIVER_VERSION=12040 LD_LIBRARY_PATH=$DRV_BIN${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} doc m2
has "GPUs:       2 (0: Simulated H200 (pincache test double); 1: Simulated H200" "$SIM_TMP/m2" &&
	has "CUDA 12.4 (12040)" "$SIM_TMP/m2" && has "fences:     stream by stream" "$SIM_TMP/m2"
tap_check $? "machine: a 12.4 driver with two GPUs: fences stream by stream"

# --- no driver: only where the loader finds none of its own
if ldconfig -p 2>/dev/null | grep -q 'libcuda\.so\.1 '; then
	tap_skip "this machine has a CUDA driver of its own"
else
	doc m0
	has "driver:     no CUDA driver found" "$SIM_TMP/m0" && has "GPUs:       none (no driver)" "$SIM_TMP/m0"
	tap_check $? "machine without a driver: no CUDA driver found"
fi

# --- programs answered from their files: never started
LD_LIBRARY_PATH=$DRV_BIN${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export LD_LIBRARY_PATH
not_started="(the command was not started)"

doc hello -- "$SIM_BIN/hello"
has "cudart:     shared libcudart.so.13: pincache serves" "$SIM_TMP/hello" && has "$not_started" "$SIM_TMP/hello"
tap_check $? "shared cudart (hello): libcudart.so.13, read from the file"

static_ok() {
	_p=$1
	rm -f "$SIM_TMP/ran"
	doc st -- "$_p" "$SIM_TMP/ran"
	has "cudart:     static (linked into" "$SIM_TMP/st" && has "$not_started" "$SIM_TMP/st" && [ ! -e "$SIM_TMP/ran" ]
}
static_ok "$DIAG_BIN/doctor_static"
tap_check $? "static cudart (doctor_static): read from its symbols, not started"
if command -v strip >/dev/null 2>&1 && cp "$DIAG_BIN/doctor_static" "$SIM_TMP/stripped" && strip "$SIM_TMP/stripped"; then
	static_ok "$SIM_TMP/stripped"
	tap_check $? "static cudart, stripped: read from its error names, not started"
else
	tap_skip "no strip"
fi
printf '#include <cuda_runtime.h>\nint main(void) { void *p; return cudaHostAlloc(&p, 4096, 0) == cudaSuccess ? cudaFreeHost(p) : 1; }\n' \
	>"$SIM_TMP/nv.cu"
if [ -n "${NVCC:-}" ] && "$NVCC" -o "$SIM_TMP/nv" "$SIM_TMP/nv.cu" >/dev/null 2>&1; then
	static_ok "$SIM_TMP/nv"
	tap_check $? "static cudart (nvcc's default build): static, not started"
else
	tap_skip "nvcc cannot build here"
fi

doc drv -- "$DIAG_BIN/doctor_drv"
has "driver API: linked against libcuda.so.1 (it calls cuDeviceGetCount, cuInit, cuMemFreeHost, cuMemHostAlloc...)" "$SIM_TMP/drv" &&
	has "$not_started" "$SIM_TMP/drv"
tap_check $? "driver API linked (doctor_drv): libcuda.so.1 and its calls, read from the file"
doc churn -- "$DRV_BIN/drv_churn"
has "driver API: names libcuda.so.1, so it loads the driver itself" "$SIM_TMP/churn" && has "$not_started" "$SIM_TMP/churn"
tap_check $? "driver API through dlopen (drv_churn): read from the file"

# A statically linked program (Debian's ldconfig is static-pie): out of reach.
st=$(command -v ldconfig || echo /sbin/ldconfig)
if [ -x "$st" ] && ldd "$st" 2>&1 | grep -q -e "statically linked" -e "not a dynamic"; then
	doc static -- "$st"
	has "is statically linked: the loader never reads LD_PRELOAD for it" "$SIM_TMP/static"
	tap_check $? "statically linked ($st): pincache cannot reach it"
else
	tap_skip "no statically linked ldconfig here"
fi

# --- started: nothing in the file says CUDA
doc true -- /bin/true
has "pincache:   has nothing to do here: the program does not use CUDA" "$SIM_TMP/true" &&
	has "it exited with status 0" "$SIM_TMP/true"
tap_check $? "non-CUDA (/bin/true): started, nothing to do"
printf '#!/bin/sh\nexec "%s" "$@"\n' "$SIM_BIN/hello" >"$SIM_TMP/hello.sh"
printf '#!/bin/sh\nexec "%s" "$@"\n' "$DIAG_BIN/doctor_static" >"$SIM_TMP/static.sh"
printf '#!/bin/sh\nexec "%s" "$@"\n' "$DRV_BIN/drv_churn" >"$SIM_TMP/churn.sh"
chmod +x "$SIM_TMP/hello.sh" "$SIM_TMP/static.sh" "$SIM_TMP/churn.sh"
doc s1 -- "$SIM_TMP/hello.sh"
has "is a script" "$SIM_TMP/s1" && has "cudart:     shared libcudart.so.13" "$SIM_TMP/s1"
tap_check $? "a script running a shared-cudart program: started, libcudart.so.13 seen loaded"
rm -f "$SIM_TMP/ran"
t0=$(date +%s)
doc s2 -- "$SIM_TMP/static.sh" "$SIM_TMP/ran"
t1=$(date +%s)
# Built with a sanitizer, the test programs' dlopen is the sanitizer
# runtime's, which the loader then names as libcuda's loader.
if [ -n "$(san_runtime "$DIAG_BIN/doctor_static")" ]; then
	static_line="through "; churn_line="(a sanitizer runtime's dlopen)"
else
	static_line="cudart:     static (linked into $DIAG_BIN/doctor_static)"
	churn_line="driver API: $DRV_BIN/drv_churn loads libcuda.so.1 itself"
fi
has "once it had loaded CUDA" "$SIM_TMP/s2" && has "$static_line" "$SIM_TMP/s2" &&
	[ -e "$SIM_TMP/ran" ] && [ $((t1 - t0)) -lt 8 ]
r=$?
tap_check $r "a script running a static-cudart program (which never exits): stopped once it loaded libcuda ($((t1 - t0)) s)"
[ $r = 0 ] || sed 's/^/# /' "$SIM_TMP/s2"
doc s3 -- "$SIM_TMP/churn.sh"
has "$churn_line" "$SIM_TMP/s3"
r=$?
tap_check $r "a script running drv_churn: the driver loaded by the program itself"
[ $r = 0 ] || sed 's/^/# /' "$SIM_TMP/s3"

t0=$(date +%s)
doc slow --timeout 1 -- sleep 30
t1=$(date +%s)
has "stopped after 1s (--timeout)" "$SIM_TMP/slow" && [ $((t1 - t0)) -lt 10 ]
tap_check $? "--timeout 1: a program that loads nothing is stopped ($((t1 - t0)) s)"
rm -f "$SIM_TMP/ran"
doc norun --no-run -- "$SIM_TMP/static.sh" "$SIM_TMP/ran"
has "without --no-run" "$SIM_TMP/norun" && [ ! -e "$SIM_TMP/ran" ]
tap_check $? "--no-run: nothing started"

# --- a CUDA library preloaded before pincache
_rt=$(san_runtime "$SIM_BIN/libcudart.so.13")
LD_PRELOAD="${_rt:+$_rt }$SIM_BIN/libcudart.so.13" "$cli" doctor >"$SIM_TMP/pre" 2>/dev/null
has "preload:    $SIM_BIN/libcudart.so.13 exports CUDA functions" "$SIM_TMP/pre"
tap_check $? "another CUDA preload: named as in pincache's way"

# --- bad input
"$cli" doctor --bogus >"$SIM_TMP/bad" 2>"$SIM_TMP/bad.err"
[ $? -eq 2 ] && [ ! -s "$SIM_TMP/bad" ] && grep -q "^Usage:" "$SIM_TMP/bad.err"
tap_check $? "an unknown option: usage on stderr, status 2"
"$cli" doctor /bin/true >/dev/null 2>&1
[ $? -eq 2 ]
tap_check $? "a command without --: status 2"
"$cli" doctor --timeout x -- /bin/true >/dev/null 2>&1
[ $? -eq 2 ]
tap_check $? "--timeout x: status 2"
"$cli" doctor -- /nonexistent/prog >/dev/null 2>&1
[ $? -eq 2 ]
tap_check $? "a command that does not exist: status 2"
"$cli" --help | grep -q "pincache doctor"
tap_check $? "--help lists doctor"
tap_done
