#!/bin/bash
# Prove that DKMS builds and installs dial9 against the installed headers,
# in private dkms/source/install trees so the host's own DKMS state and
# /lib/modules are not touched.
set -euo pipefail
ver=$1 kver=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
[ "$ver" = "$(cat VERSION)" ] || { echo "dkms: version $ver is not VERSION's ($(cat VERSION))"; exit 1; }
# The source tree as make dkms-src installs it (packaging/packaging.mk):
# dkms.conf with the version written in, VERSION for MODULE_VERSION.
make --no-print-directory dkms-src DESTDIR="$tmp/stage" >/dev/null
src="$tmp/stage/usr/src/dial9-$ver"
grep -qx "PACKAGE_VERSION=\"$ver\"" "$src/dkms.conf" ||
	{ echo "dkms: $src/dkms.conf does not say version $ver"; exit 1; }
mkdir -p "$tmp/tree" "$tmp/install/$kver"
opts=(--sourcetree "$tmp/stage/usr/src" --dkmstree "$tmp/tree" --installtree "$tmp/install")
dkms add "${opts[@]}" -m dial9 -v "$ver"
dkms build "${opts[@]}" -m dial9 -v "$ver" -k "$kver"
dkms install "${opts[@]}" -m dial9 -v "$ver" -k "$kver" --no-depmod
ko=$(find "$tmp/install" -name 'dial9.ko*' | head -n1)
[ -n "$ko" ] || { echo "dkms: no dial9.ko installed under $tmp/install"; exit 1; }
modinfo -F vermagic "$ko" | grep -q "^$kver " || {
	echo "dkms: $ko has the wrong vermagic: $(modinfo -F vermagic "$ko")"; exit 1; }
[ "$(modinfo -F version "$ko")" = "$ver" ] || {
	echo "dkms: $ko has version $(modinfo -F version "$ko"), not $ver"; exit 1; }
echo "ok - dkms add/build/install dial9 $ver for $kver: ${ko#"$tmp"/install}"
