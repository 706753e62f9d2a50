#!/bin/bash
# Prove that DKMS builds and installs dial9 against the installed headers,
# in private dkms/source/install trees so the host's own DKMS state and
# /lib/modules are not touched.
set -euo pipefail
ver=$1 kver=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
src="$tmp/src/dial9-$ver"
mkdir -p "$src" "$tmp/tree" "$tmp/install/$kver"
cp -r Kbuild dkms.conf kmod uapi "$src/"
opts=(--sourcetree "$tmp/src" --dkmstree "$tmp/tree" --installtree "$tmp/install")
dkms add "${opts[@]}" -m dial9 -v "$ver"
dkms build "${opts[@]}" -m dial9 -v "$ver" -k "$kver"
dkms install "${opts[@]}" -m dial9 -v "$ver" -k "$kver" --no-depmod
ko=$(find "$tmp/install" -name 'dial9.ko*' | head -n1)
[ -n "$ko" ] || { echo "dkms: no dial9.ko installed under $tmp/install"; exit 1; }
modinfo -F vermagic "$ko" | grep -q "^$kver " || {
	echo "dkms: $ko has the wrong vermagic: $(modinfo -F vermagic "$ko")"; exit 1; }
echo "ok - dkms add/build/install dial9 $ver for $kver: ${ko#"$tmp"/install}"
