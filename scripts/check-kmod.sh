#!/bin/bash
# Kernel-style checks on the module: checkpatch (from Debian's
# linux-source-6.1, unpacked by make deps), and a warning-free build
# with sparse (make C=2) for the kernel headers in $1.
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

# A fresh build in a copy: every file compiled (gcc's warnings) and
# checked (sparse), whatever the tree's own build holds.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp -r Kbuild kmod uapi "$tmp/"
log=$tmp/build.log
if ! make -s -C "$kdir" M="$tmp" C=2 CHECK="sparse -Wno-unknown-attribute" \
	modules >"$log" 2>&1 || grep -E 'warning|error' "$log"; then
	cat "$log"
	echo "not ok - build and sparse for $(basename "$kdir")"
	fail=1
else
	echo "ok - warning-free build and sparse (C=2) for $(basename "$kdir")"
fi
exit $fail
