#!/bin/bash
# make dkms-install / dkms-uninstall: dial9 through DKMS on this host.
#
#   dkms-install.sh install VERSION KVER "COPY-COMMAND"
#   dkms-install.sh uninstall VERSION
#
# install: the source goes to /usr/src/dial9-VERSION (COPY-COMMAND, i.e.
# make dkms-src), then dkms add/build/install for KVER.  Run again with
# the same source, it says it is installed and changes nothing; with a
# changed source it removes that version from DKMS and installs it anew
# for KVER (an upgrade in place).  It refuses to touch a tree that the
# dial9-dkms package owns.
set -euo pipefail
action=$1 ver=$2
src=/usr/src/dial9-$ver

owned_by_package() {
	dpkg-query -S "$src" >/dev/null 2>&1
}

case $action in
install)
	kver=$3 copy=$4
	[ -n "$kver" ] || { echo "dkms-install: no kernel version (KVER=)" >&2; exit 1; }
	if [ ! -e "/lib/modules/$kver/build" ]; then
		echo "dkms-install: no headers for kernel $kver" \
			"(/lib/modules/$kver/build): install linux-headers-$kver," \
			"or choose another kernel with KVER=" >&2
		exit 1
	fi
	if owned_by_package; then
		echo "dkms-install: $src belongs to the dial9-dkms package;" \
			"upgrade that package instead (apt-get install ./dial9-dkms_*.deb)" >&2
		exit 1
	fi
	stage=$(mktemp -d)
	trap 'rm -rf "$stage"' EXIT
	$copy DESTDIR="$stage" >/dev/null
	status=$(dkms status -m dial9 -v "$ver" -k "$kver" 2>/dev/null || true)
	if [ -d "$src" ] && diff -r -q "$stage$src" "$src" >/dev/null; then
		if echo "$status" | grep -q ': installed'; then
			echo "dkms-install: dial9 $ver is already installed for $kver"
			exit 0
		fi
	elif [ -e "/var/lib/dkms/dial9/$ver" ]; then
		echo "dkms-install: the source of dial9 $ver changed; upgrading"
		dkms remove -m dial9 -v "$ver" --all
	fi
	rm -rf "$src"
	mkdir -p "$(dirname "$src")"
	cp -a "$stage$src" "$src"
	if [ ! -e "/var/lib/dkms/dial9/$ver" ]; then
		dkms add -m dial9 -v "$ver"
	fi
	dkms install -m dial9 -v "$ver" -k "$kver" # builds it first
	;;
uninstall)
	if owned_by_package; then
		echo "dkms-uninstall: $src belongs to the dial9-dkms package;" \
			"apt-get purge dial9-dkms instead" >&2
		exit 1
	fi
	if [ -e "/var/lib/dkms/dial9/$ver" ]; then
		dkms remove -m dial9 -v "$ver" --all
	fi
	rm -rf "$src"
	;;
*)
	echo "usage: $0 install VERSION KVER COPY-COMMAND | uninstall VERSION" >&2
	exit 2
	;;
esac
