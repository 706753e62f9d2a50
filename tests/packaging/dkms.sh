#!/bin/bash
# make dkms-install on this host: the running kernel by default, KVER=
# for another; a second run says it is installed and changes nothing, a
# changed source is upgraded in place; make dkms-uninstall leaves no
# DKMS tree, source or module behind.
set -euo pipefail
ver=$1 t=$2 kver=$3
. tests/packaging/lib.sh
if [ -e /var/lib/dkms/dial9 ] || compgen -G '/usr/src/dial9-*' >/dev/null; then
	fail "dial9 is in DKMS already (make dkms-install, or the package?): remove it first"
fi
cleanup() { make --no-print-directory dkms-uninstall >>"$t/dkms.log" 2>&1 || true; }
trap cleanup EXIT

# The kernel make dkms-install chose (DKMS_KVER in packaging.mk).
chosen() { echo 'print-kver: ; @echo $(DKMS_KVER)' |
	make -s --no-print-directory -f Makefile -f - print-kver "$@"; }
[ "$(chosen)" = "$(uname -r)" ] ||
	fail "make dkms-install chooses $(chosen), not the running kernel $(uname -r)"
[ "$(chosen KVER="$kver")" = "$kver" ] && [ "$(KVER=$kver chosen)" = "$kver" ] ||
	fail "KVER=$kver does not choose $kver"
if [ ! -e "/lib/modules/$(uname -r)/build" ]; then
	set +e
	make --no-print-directory dkms-install >"$t/dkms-nohdr.log" 2>&1
	rc=$?
	set -e
	[ $rc != 0 ] && has "no headers for kernel $(uname -r)" "$t/dkms-nohdr.log" ||
		fail "dkms-install without headers: rc $rc, $(cat "$t/dkms-nohdr.log")"
	ok "make dkms-install: the running kernel $(uname -r) by default (no headers: it says so)"
else
	ok "make dkms-install: the running kernel $(uname -r) by default"
fi

installed_for() { dkms status -m dial9 -v "$ver" -k "$kver" | has ': installed'; }
ko() { ls /lib/modules/"$kver"/updates/dkms/dial9.ko* 2>/dev/null | head -n1; }
make --no-print-directory dkms-install KVER="$kver" >"$t/dkms.log" 2>&1 ||
	{ tail -20 "$t/dkms.log"; fail "make dkms-install KVER=$kver"; }
installed_for && [ -n "$(ko)" ] || fail "not installed for $kver: $(dkms status)"
modinfo -F vermagic "$(ko)" | has "^$kver " || fail "vermagic $(modinfo -F vermagic "$(ko)")"
[ "$(modinfo -F version "$(ko)")" = "$ver" ] || fail "version $(modinfo -F version "$(ko)")"
ok "make dkms-install KVER=$kver: dial9.ko $ver built and installed"

before=$(stat -c %Y "$(ko)")
make --no-print-directory dkms-install KVER="$kver" >"$t/dkms-again.log" 2>&1 ||
	fail "a second make dkms-install: $(tail -5 "$t/dkms-again.log")"
has "dial9 $ver is already installed for $kver" "$t/dkms-again.log" ||
	fail "a second run does not say it is installed: $(cat "$t/dkms-again.log")"
[ "$(stat -c %Y "$(ko)")" = "$before" ] || fail "a second run rebuilt the module"
ok "a second make dkms-install says it is installed and changes nothing"

echo "/* dial9-test-packages: changed */" >>/usr/src/dial9-"$ver"/kmod/main.c
make --no-print-directory dkms-install KVER="$kver" >"$t/dkms-upgrade.log" 2>&1 ||
	fail "make dkms-install after a change: $(tail -5 "$t/dkms-upgrade.log")"
has "the source of dial9 $ver changed; upgrading" "$t/dkms-upgrade.log" ||
	fail "no upgrade: $(cat "$t/dkms-upgrade.log")"
installed_for || fail "not installed after the upgrade: $(dkms status)"
! has 'dial9-test-packages: changed' /usr/src/dial9-"$ver"/kmod/main.c || fail "the old source stayed"
ok "a changed source: make dkms-install upgrades in place"

# dkms.conf claims Debian 12's two kernel lines and nothing else: its
# BUILD_EXCLUSIVE_KERNEL, as dkms reads it (bash =~), takes 6.1 and 6.12
# versions only, and dkms itself refuses to build for another (exit 77,
# before it looks for headers).
excl=$(sed -n 's/^BUILD_EXCLUSIVE_KERNEL="\(.*\)"$/\1/p' dkms.conf)
[ -n "$excl" ] || fail "dkms.conf has no BUILD_EXCLUSIVE_KERNEL"
for k in 6.1.0-28-cloud-amd64 6.1.0-31-amd64 6.12.38+deb12-cloud-amd64 \
	6.12.12+bpo-amd64 "$kver"; do
	[[ $k =~ $excl ]] || fail "BUILD_EXCLUSIVE_KERNEL=$excl refuses $k"
done
for k in 6.10.0-1-amd64 6.11.5 6.13.2-amd64 6.120.0 5.10.0-30-amd64 \
	6.5.0-1-cloud-amd64 7.1.0 16.1.0 6.18.44-fc; do
	if [[ $k =~ $excl ]]; then fail "BUILD_EXCLUSIVE_KERNEL=$excl takes $k"; fi
done
set +e
dkms build -m dial9 -v "$ver" -k 6.10.0-1-amd64 >"$t/dkms-excl.log" 2>&1
rc=$?
set -e
[ $rc = 77 ] && has 'BUILD_EXCLUSIVE directive which does not match' "$t/dkms-excl.log" ||
	fail "dkms build for 6.10.0-1-amd64: rc $rc, $(cat "$t/dkms-excl.log")"
ok "BUILD_EXCLUSIVE_KERNEL=$excl: 6.1 and 6.12 only; dkms refuses 6.10 (exit 77)"

make --no-print-directory dkms-uninstall >>"$t/dkms.log" 2>&1 || fail "make dkms-uninstall"
trap - EXIT
[ ! -e /var/lib/dkms/dial9 ] && ! compgen -G '/usr/src/dial9-*' >/dev/null &&
	! compgen -G '/lib/modules/*/updates/dkms/dial9.ko*' >/dev/null ||
	fail "make dkms-uninstall left: $(ls -d /var/lib/dkms/dial9 /usr/src/dial9-* /lib/modules/*/updates/dkms/dial9.ko* 2>/dev/null)"
ok "make dkms-uninstall: no DKMS tree, source or module left"
