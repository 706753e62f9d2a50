#!/bin/sh
# Print the kernel version (uname -r form) of the installed Debian cloud
# headers: the kernel dial9.ko is built for and the test VM boots.
set -eu
if [ -n "${DIAL9_KVER:-}" ]; then
	echo "$DIAL9_KVER"
	exit 0
fi
dep=$(dpkg-query -W -f='${Depends}' linux-headers-cloud-amd64 2>/dev/null || true)
v=$(echo "$dep" | sed -n 's/.*linux-headers-\([^ ,]*-cloud-amd64\).*/\1/p')
if [ -z "$v" ]; then
	v=$(ls -d /usr/src/linux-headers-*-cloud-amd64 2>/dev/null | sort -V | tail -n1 | sed 's|/usr/src/linux-headers-||')
fi
[ -n "$v" ] || { echo "kver: no linux-headers-cloud-amd64 installed (run make deps)" >&2; exit 1; }
echo "$v"
