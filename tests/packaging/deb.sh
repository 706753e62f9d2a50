#!/bin/bash
# The Debian packages as a fleet host gets them: make deb (lintian clean
# of errors), apt-get install ./*.deb, DKMS builds dial9.ko for the
# installed headers (KVER), a program links through pkg-config shared
# and static, then apt-get purge leaves nothing behind: none of the
# packages' files, no DKMS tree (/var/lib/dkms/dial9), no /usr/src/dial9-*,
# no module, no group; and apt installed nothing else.
set -euo pipefail
ver=$1 t=$2 kver=$3
. tests/packaging/lib.sh
pkgs="dial9-dkms libdial9-0 libdial9-dev dial9"
apt_opts=(-o DPkg::Lock::Timeout=600 -y -q --no-install-recommends)
export DEBIAN_FRONTEND=noninteractive

installed() { dpkg-query -W -f='${db:Status-Abbrev} ${Package}\n' $pkgs 2>/dev/null |
	awk '$1 != "un" { print $2 }'; }
purge() {
	local p
	p=$(installed)
	[ -z "$p" ] || apt-get "${apt_opts[@]}" purge $p >>"$t/apt.log" 2>&1
}

if [ -n "$(installed)" ]; then
	echo "# purging dial9 packages left by an earlier run: $(installed | tr '\n' ' ')"
	purge
fi
if [ -e /var/lib/dkms/dial9 ] || compgen -G '/usr/src/dial9-*' >/dev/null; then
	fail "dial9 is in DKMS outside the packages (make dkms-install?): make dkms-uninstall first"
fi
trap purge EXIT

make --no-print-directory deb >"$t/deb.log" 2>&1 || { tail -30 "$t/deb.log"; fail "make deb"; }
debs=()
for p in $pkgs; do
	debs+=("$(ls "$PWD"/build/deb/"${p}"_"$ver"_*.deb)")
done
[ "$(ls build/deb/*.deb | wc -l)" = 4 ] || fail "make deb made: $(ls build/deb/*.deb)"
grep -q '^lintian --fail-on error' "$t/deb.log" || fail "make deb did not run lintian"
ok "make deb: $pkgs $ver, lintian clean of errors"

dpkg-query -W -f='${Package}\n' | sort >"$t/before"
apt-get "${apt_opts[@]}" install "${debs[@]}" >"$t/apt.log" 2>&1 ||
	{ tail -30 "$t/apt.log"; fail "apt-get install ./*.deb"; }
dpkg-query -W -f='${Package}\n' | sort >"$t/after"
extra=$(comm -13 "$t/before" "$t/after" | grep -vxF -f <(tr ' ' '\n' <<<"$pkgs") || true)
[ -z "$extra" ] || fail "apt-get also installed: $extra (add them to scripts/deps.sh)"
for p in $pkgs; do
	[ "$(dpkg-query -W -f='${db:Status-Abbrev}${Version}' "$p")" = "ii $ver" ] ||
		fail "$p is not installed at $ver"
done
ok "apt-get install ./*.deb: the four packages at $ver, nothing else"

# The postinst builds for the running kernel when its headers are there;
# a kernel installed beside it is built by DKMS's header hook, as when
# linux-headers-KVER is installed.  This host has both of Debian 12's
# cloud kernel lines: the module must be built for each.
for k in $kver $(scripts/kver.sh 6.12 2>/dev/null); do
	if ! dkms status -m dial9 -v "$ver" -k "$k" | has ': installed'; then
		echo "# the postinst built for $(uname -r) only; the header hook for $k"
		/etc/kernel/header_postinst.d/dkms "$k" >>"$t/apt.log" 2>&1
	fi
	st=$(dkms status -m dial9 -v "$ver" -k "$k")
	echo "$st" | has "^dial9/$ver, $k, .*: installed" || fail "dkms status: $st"
	ko=$(ls /lib/modules/"$k"/updates/dkms/dial9.ko* 2>/dev/null | head -n1)
	[ -n "$ko" ] || fail "no dial9.ko under /lib/modules/$k/updates/dkms"
	modinfo -F vermagic "$ko" | has "^$k " || fail "$ko: vermagic $(modinfo -F vermagic "$ko")"
	[ "$(modinfo -F version "$ko")" = "$ver" ] || fail "$ko: version $(modinfo -F version "$ko")"
	ok "DKMS built and installed dial9.ko $ver for $k ($st)"
done
getent group dial9 >/dev/null || fail "no group dial9"
[ -f /lib/udev/rules.d/60-dial9.rules ] && [ -f /usr/lib/modules-load.d/dial9.conf ] ||
	fail "udev rule or modules-load file missing"
ok "group dial9, the udev rule and the modules-load file"

cflags=$(pkg-config --cflags dial9)
# shellcheck disable=SC2086
$CC $PROG_CFLAGS $cflags -o "$t/prog-deb" tests/packaging/prog.c $(pkg-config --libs dial9)
ldd "$t/prog-deb" | has "=> /lib/.*/libdial9.so.0\|=> /usr/lib/.*/libdial9.so.0" ||
	fail "prog-deb: $(ldd "$t/prog-deb")"
rm -rf "$t/rec-deb"
"$t/prog-deb" "$t/rec-deb" | has "^recorded [1-9].*, dial9 $ver\$" ||
	fail "prog-deb does not record, or its <dial9.h> is not version $ver"
static_libs=$(pkg-config --static --libs dial9 | sed 's/-ldial9\b/-l:libdial9.a/')
# shellcheck disable=SC2086
$CC $PROG_CFLAGS $cflags -o "$t/prog-deb-static" tests/packaging/prog.c $static_libs
! ldd "$t/prog-deb-static" | has libdial9 || fail "prog-deb-static needs libdial9.so"
"$t/prog-deb-static" "$t/rec-deb" | has '^recorded [1-9]' || fail "prog-deb-static"
dial9 --version | has -x "dial9 $ver" || fail "dial9 --version"
dial9 info "$t/rec-deb" >/dev/null || fail "dial9 info on what prog-deb recorded"
man -w dial9 | has '^/usr/share/man/man1/dial9.1' || fail "man dial9"
ok "pkg-config --cflags --libs dial9 and --static link a program; dial9 reads its trace; man dial9"

# What purge must take away: every file of the packages, then DKMS's.
for p in $pkgs; do dpkg -L "$p"; done | while read -r f; do
	if [ ! -d "$f" ]; then echo "$f"; fi
done | sort -u >"$t/pkg-files"
apt-get "${apt_opts[@]}" purge $pkgs >>"$t/apt.log" 2>&1 || fail "apt-get purge"
trap - EXIT
[ -z "$(installed)" ] || fail "still known to dpkg: $(installed)"
left=$(while read -r f; do
	if [ -e "$f" ] || [ -L "$f" ]; then echo "$f"; fi
done <"$t/pkg-files")
[ -z "$left" ] || fail "purge left files: $left"
[ ! -e /var/lib/dkms/dial9 ] || fail "purge left /var/lib/dkms/dial9: $(ls -R /var/lib/dkms/dial9)"
! compgen -G '/usr/src/dial9-*' >/dev/null || fail "purge left $(ls -d /usr/src/dial9-*)"
! compgen -G '/lib/modules/*/updates/dkms/dial9.ko*' >/dev/null ||
	fail "purge left $(ls /lib/modules/*/updates/dkms/dial9.ko*)"
! getent group dial9 >/dev/null || fail "purge left group dial9"
dpkg-query -W -f='${Package}\n' | sort >"$t/purged"
cmp -s "$t/before" "$t/purged" || fail "packages differ from before: $(diff "$t/before" "$t/purged")"
ok "apt-get purge: no file ($(wc -l <"$t/pkg-files") of them), no DKMS tree, module or group left"
