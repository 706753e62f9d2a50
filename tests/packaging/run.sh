#!/bin/bash
# make test-packages: the version in one place, make install into a
# DESTDIR, the build without S3, make dkms-install, the Debian packages
# (each script says what it checks).  Needs root for DKMS and packages.
set -euo pipefail
ver=$1 t=$2
cd "$(dirname "$0")/../.."
. tests/packaging/lib.sh
mkdir -p "$t"
t=$(cd "$t" && pwd)
start=$SECONDS

# The VERSION file is the version: the Makefile reads it (DIAL9_VERSION,
# $ver here), the library, the command and the module (Kbuild) are given
# it, dkms.conf, dial9.pc, <dial9.h> and debian/changelog have it written
# in where they are installed.  None of those says it by itself; what
# they are made into says it (the steps below: pkg-config, dial9
# --version, prog's DIAL9_VERSION_STRING, modinfo, the packages).
[ "$ver" = "$(cat VERSION)" ] || fail "the Makefile's version $ver is not VERSION's"
for f in Makefile Kbuild dkms.conf kmod/main.c lib/include/dial9.h lib/dial9.pc.in \
	lib/lib.mk packaging/packaging.mk debian/rules; do
	if grep -qF "$ver" "$f"; then fail "$f says version $ver itself"; fi
done
ok "version $ver in VERSION alone"

tests/packaging/install.sh "$ver" "$t"
tests/packaging/nos3.sh "$ver" "$t"
tests/packaging/dkms.sh "$ver" "$t" "$(scripts/kver.sh)"
tests/packaging/deb.sh "$ver" "$t" "$(scripts/kver.sh)"
echo "test-packages: passed in $((SECONDS - start)) s"
