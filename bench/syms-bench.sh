#!/bin/sh
# SPDX-License-Identifier: MIT
# syms-bench.sh DIR [FUNCS] [N] - the cost of naming frames (make
# bench-syms, docs/benchmarks.md): DIR/syms_bench on
#  1. a generated program of FUNCS functions (default 100000) with .symtab,
#  2. its stripped copy, named from its debug file by build-id
#     (DIAL9_DEBUG_DIR),
#  3. the largest shared library here with only .dynsym (Debian strips:
#     libLLVM where installed),
# N distinct addresses each (default 10000); then DIR/symtab_bench: the
# symbol table the worker makes of a segment whose stacks hold N distinct
# frames of the generated program (each twice).  BENCH lines on stdout.
set -eu
B=$1 FUNCS=${2:-100000} N=${3:-10000}
CC=${CC:-cc}
T=$B/syms
mkdir -p "$T"
if [ ! -e "$T/gen-$FUNCS" ]; then
	awk -v n="$FUNCS" 'BEGIN {
		for (i = 0; i < n; i++)
			printf "int d9_gen_%d(int x) { return x * %d + 1; }\n", i, i
		print "int main(void) { return d9_gen_0(0) - 1; }"
	}' > "$T/gen.c"
	$CC -O0 -o "$T/gen-$FUNCS" "$T/gen.c"
fi
rm -rf "$T/debug"
id=$(readelf -n "$T/gen-$FUNCS" | sed -n 's/^ *Build ID: //p')
mkdir -p "$T/debug/.build-id/$(echo "$id" | cut -c1-2)"
objcopy --only-keep-debug "$T/gen-$FUNCS" \
	"$T/debug/.build-id/$(echo "$id" | cut -c1-2)/$(echo "$id" | cut -c3-).debug"
objcopy --strip-all "$T/gen-$FUNCS" "$T/gen-$FUNCS-stripped"
echo "BENCH-INFO case=symtab"
"$B/syms_bench" "$T/gen-$FUNCS" "$N"
echo "BENCH-INFO case=debug-file"
# the stripped copy's addresses come from the unstripped one (same layout)
DIAL9_DEBUG_DIR=$T/debug "$B/syms_bench" "$T/gen-$FUNCS-stripped" "$N" 5 \
	"$T/gen-$FUNCS"
lib=$(ls -S /usr/lib/x86_64-linux-gnu/libLLVM*.so* 2>/dev/null | head -1 || true)
if [ -n "$lib" ]; then
	echo "BENCH-INFO case=dynsym"
	"$B/syms_bench" "$lib" "$N"
fi
echo "BENCH-INFO case=segment-table"
"$B/symtab_bench" "$T/gen-$FUNCS" "$N"
