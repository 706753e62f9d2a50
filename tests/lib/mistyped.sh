#!/bin/sh
# SPDX-License-Identifier: MIT
# mistyped.sh CC... - DIAL9_EMIT and the span macros take only struct
# dial9_value values: tests/lib/mistyped.c's CASE 0 compiles (with
# -Werror) under each compiler and C mode, CASEs 1-6 do not.
set -u
fail=0
for cc in "$@"; do
	for std in gnu11 c11; do
		flags="-std=$std -Wall -Wextra -Werror -Ilib/include -fsyntax-only"
		# shellcheck disable=SC2086
		if ! $cc $flags -DCASE=0 tests/lib/mistyped.c; then
			echo "FAILED: $cc -std=$std: correct uses do not compile"
			fail=1
		fi
		for c in 1 2 3 4 5 6; do
			# shellcheck disable=SC2086
			if $cc $flags -DCASE=$c tests/lib/mistyped.c 2>/dev/null; then
				echo "FAILED: $cc -std=$std: mistyped CASE $c compiles"
				fail=1
			fi
		done
	done
done
[ "$fail" = 0 ] && echo "mistyped: correct uses compile, 6 mistyped ones do not ($*)"
exit $fail
