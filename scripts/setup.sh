#!/bin/sh
# Install what pincache builds with (Debian packages), bootstrap, and build
# into _build/plain.  Sourced-free: run it, or let test.sh/demo.sh run it.
#   scripts/setup.sh [TOOL:PACKAGE...]   also install PACKAGE when TOOL (a command,
#                                        or a file's absolute path) is missing
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
jobs=$(nproc 2>/dev/null || echo 2)
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}

need_pkgs=""
for t in autoconf:autoconf automake:automake libtoolize:libtool pkg-config:pkg-config \
         make:make gcc:gcc groff:groff-base python3:python3 valgrind:valgrind "$@"; do
    case $t in
    /*) [ -e "${t%%:*}" ] ;;
    *) command -v "${t%%:*}" >/dev/null 2>&1 ;;
    esac || need_pkgs="$need_pkgs ${t#*:}"
done
[ -f /usr/include/uthash.h ] || need_pkgs="$need_pkgs uthash-dev"
[ -f /usr/include/jansson.h ] || need_pkgs="$need_pkgs libjansson-dev"
if [ -n "$need_pkgs" ]; then
    echo "== installing:$need_pkgs"
    if [ "$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi
    $SUDO apt-get update -qq
    # shellcheck disable=SC2086
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq $need_pkgs >/dev/null
fi
if [ ! -f "$CUDA_HOME/include/cuda_runtime_api.h" ]; then
    echo "pincache needs the CUDA Toolkit headers: set CUDA_HOME (now $CUDA_HOME)" >&2
    exit 1
fi

if [ ! -x configure ] || [ configure.ac -nt configure ]; then
    echo "== bootstrap"
    ./bootstrap >/dev/null 2>&1 || ./bootstrap
fi
echo "== build (_build/plain)"
mkdir -p _build/plain
cd _build/plain
[ -f Makefile ] || "$top/configure" -q --with-cuda="$CUDA_HOME"
make -s -j"$jobs"
