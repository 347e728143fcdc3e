#!/bin/sh
# exports: libpincache's dynamic symbols match the lists that drive the
# dlsym and dlvsym hooks and the libcudart.so.12 twins (src/intercept/cudart.def and
# driver.def): every cuda*@@libcudart.so.13 has its @libcudart.so.12 twin,
# every exported name is listed, and nothing else leaks.
. "$top_srcdir/tests/sim/common.sh"

if ! have_shim || ! command -v nm >/dev/null 2>&1; then
	tap_skip "needs libpincache.so and nm"
	tap_done
	exit 0
fi
nm -D --defined-only "$PINCACHE_LIB" | awk '{ print $3 }' | sort >"$SIM_TMP/syms"
sed -n 's/^PC_RT\(_ABI12\|13\)\{0,1\}(\([A-Za-z0-9_]*\),.*/\2/p' "$top_srcdir/src/intercept/cudart.def" | sort >"$SIM_TMP/rt"
# PC_RT13: calls new in CUDA 13, which have no libcudart.so.12 twin
sed -n 's/^PC_RT\(_ABI12\)\{0,1\}(\([A-Za-z0-9_]*\),.*/\2/p' "$top_srcdir/src/intercept/cudart.def" | sort >"$SIM_TMP/rt12want"
sed -n 's/^PC_DRV(\([A-Za-z0-9_]*\),.*/\1/p' "$top_srcdir/src/intercept/driver.def" | sort >"$SIM_TMP/drv"
sed -n 's/@@libcudart\.so\.13$//p' "$SIM_TMP/syms" | sort >"$SIM_TMP/rt13"
sed -n 's/@libcudart\.so\.12$//p' "$SIM_TMP/syms" | sort >"$SIM_TMP/rt12"
grep -E '^cu[A-Z]' "$SIM_TMP/syms" | grep -v '@' >"$SIM_TMP/drvx"
cmp -s "$SIM_TMP/rt13" "$SIM_TMP/rt"
tap_check $? "cuda*@@libcudart.so.13 exports are exactly cudart.def's ($(wc -l <"$SIM_TMP/rt") names)"
diff "$SIM_TMP/rt" "$SIM_TMP/rt13" | sed 's/^/# /'
cmp -s "$SIM_TMP/rt12" "$SIM_TMP/rt12want"
tap_check $? "every one but the CUDA 13 ones (PC_RT13) has its @libcudart.so.12 twin"
diff "$SIM_TMP/rt12want" "$SIM_TMP/rt12" | sed 's/^/# /'
cmp -s "$SIM_TMP/drvx" "$SIM_TMP/drv"
tap_check $? "cu* exports are exactly driver.def's"
diff "$SIM_TMP/drv" "$SIM_TMP/drvx" | sed 's/^/# /'
other=$(grep -v -E '^(cuda|cu[A-Z]|cupti|dlv?sym$|libcudart\.so\.1[23]$)' "$SIM_TMP/syms" | tr '\n' ' ')
[ -z "$other" ]
tap_check $? "nothing else is exported (${other:-none})"
tap_done
