# simnvcc.sh - sourced by the benchmarks' verdict tests (coldalloc-verdicts.sh,
# xover-verdicts.sh) to run a benchmark script's measuring path on the
# simulated runtime: sim_nvcc DIR makes DIR/cuda/bin/nvcc, a wrapper that
# links nvcc's programs with simreg.c (the fat-binary registrations the sim
# lacks) against DIR/cuda/lib64/libcudart.so.13, the sim's runtime.  Returns
# 1 where that cannot be: no nvcc ($NVCC), no sim runtime or library
# ($PINCACHE_LIB), or a sanitizer build (nvcc's programs cannot load their
# runtimes first).  Needs top_srcdir and top_builddir.
sim_nvcc() {
	_sim=$top_builddir/tests/sim/libcudart.so.13
	[ -n "${NVCC:-}" ] && [ -x "$NVCC" ] && [ -f "$_sim" ] && [ -f "${PINCACHE_LIB:-}" ] &&
		! ldd "$_sim" "$PINCACHE_LIB" 2>/dev/null | grep -q 'lib[at]san' &&
		mkdir -p "$1/cuda/bin" "$1/cuda/lib64" && ln -sf "$_sim" "$1/cuda/lib64/libcudart.so.13" &&
		${CC:-cc} -c -fPIC -o "$1/cuda/simreg.o" "$top_srcdir/tests/bench/simreg.c" || return 1
	printf '#!/bin/sh\nexec "%s" "$@" "%s"\n' "$NVCC" "$1/cuda/simreg.o" >"$1/cuda/bin/nvcc"
	chmod +x "$1/cuda/bin/nvcc"
}
