# simnvcc.sh - sourced by the benchmarks' make check tests
# (coldalloc-verdicts.sh, xover-verdicts.sh, nodeshare-sim.sh): nvcc's programs run on the
# simulated runtime.
#
#   sim_nvcc DIR   make DIR/cuda: a wrapper DIR/cuda/bin/nvcc that links
#                  simreg.c (the registration calls of nvcc's start-up code,
#                  which the sim has no fat binaries for) into every program,
#                  and DIR/cuda/lib64/libcudart.so.13, the sim's, which
#                  cuda-env.sh's pc_find_nvcc then points the programs at.
#                  Returns 1 where that cannot be done: no nvcc ($NVCC), no
#                  sim, no library, or a sanitizer build (nvcc's programs
#                  cannot load their runtimes first).
sim_nvcc() {
	_sim=$top_builddir/tests/sim/libcudart.so.13
	[ -n "${NVCC:-}" ] && [ -x "$NVCC" ] && [ -f "$_sim" ] && [ -f "${PINCACHE_LIB:-}" ] &&
		! ldd "$_sim" "$PINCACHE_LIB" 2>/dev/null | grep -q 'lib[at]san' &&
		mkdir -p "$1/cuda/bin" "$1/cuda/lib64" && ln -sf "$_sim" "$1/cuda/lib64/libcudart.so.13" &&
		${CC:-cc} -c -fPIC -o "$1/cuda/simreg.o" "$top_srcdir/tests/bench/simreg.c" || return 1
	printf '#!/bin/sh\nexec "%s" "$@" "%s"\n' "$NVCC" "$1/cuda/simreg.o" >"$1/cuda/bin/nvcc" &&
		chmod +x "$1/cuda/bin/nvcc"
}
