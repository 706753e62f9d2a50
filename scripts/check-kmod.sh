#!/bin/bash
# Kernel-style checks on the module: checkpatch (from Debian's
# linux-source-6.1, unpacked by make deps) and sparse (make C=2).
set -euo pipefail
# LINUX_VERSION_CODE is ignored because kmod/compat.h exists to hold exactly
# those tests, in one place.
kdir=$1
cache=${DIAL9_CACHE:-build/cache}
cp=$cache/linux-source/scripts/checkpatch.pl
fail=0

files=(kmod/*.c kmod/*.h uapi/linux/dial9.h)
if ! perl "$cp" --no-tree --quiet --show-types \
	--ignore SPDX_LICENSE_TAG,FILE_PATH_CHANGES,LINUX_VERSION_CODE \
	-f "${files[@]}"; then
	echo "not ok - checkpatch"
	fail=1
else
	echo "ok - checkpatch --no-tree: ${files[*]}"
fi

log=$(mktemp)
make -s -C "$kdir" M="$PWD" C=2 CHECK="sparse -Wno-unknown-attribute" modules >"$log" 2>&1 || true
if grep -E 'warning|error' "$log"; then
	echo "not ok - sparse"
	fail=1
else
	echo "ok - sparse (C=2)"
fi
rm -f "$log"
exit $fail
