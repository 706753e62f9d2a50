#!/bin/sh
# Print the kernel version (uname -r form) of installed Debian cloud
# headers: a kernel dial9.ko is built for and the test VM boots.
#   kver.sh        the 6.1 line (linux-headers-cloud-amd64), or $DIAL9_KVER
#   kver.sh 6.12   the newest installed 6.12 cloud headers
set -eu
line=${1:-}
if [ -n "$line" ]; then
	v=$(ls -d /usr/src/linux-headers-"$line".*-cloud-amd64 2>/dev/null |
		sed 's|/usr/src/linux-headers-||' | sort -V | tail -n1)
	[ -n "$v" ] || { echo "kver: no linux-headers-$line.*-cloud-amd64 installed (run make deps)" >&2; exit 1; }
	echo "$v"
	exit 0
fi
if [ -n "${DIAL9_KVER:-}" ]; then
	echo "$DIAL9_KVER"
	exit 0
fi
dep=$(dpkg-query -W -f='${Depends}' linux-headers-cloud-amd64 2>/dev/null || true)
v=$(echo "$dep" | sed -n 's/.*linux-headers-\([^ ,]*-cloud-amd64\).*/\1/p')
if [ -z "$v" ]; then
	v=$(ls -d /usr/src/linux-headers-6.1.*-cloud-amd64 2>/dev/null | sort -V | tail -n1 | sed 's|/usr/src/linux-headers-||')
fi
[ -n "$v" ] || { echo "kver: no linux-headers-cloud-amd64 installed (run make deps)" >&2; exit 1; }
echo "$v"
