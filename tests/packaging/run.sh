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

# DIAL9_VERSION (Makefile) is the version; debian/changelog and the
# library's LIB_VERSION derive from it, the rest must say the same.
for f in "dkms.conf:PACKAGE_VERSION=\"$ver\"" "kmod/main.c:MODULE_VERSION(\"$ver\")" \
	"lib/include/dial9.h:#define DIAL9_VERSION_STRING \"$ver\""; do
	grep -qF "${f#*:}" "${f%%:*}" || fail "${f%%:*} does not say version $ver"
done
ok "version $ver in the Makefile, dkms.conf, the module and <dial9.h>"

tests/packaging/install.sh "$ver" "$t"
tests/packaging/nos3.sh "$ver" "$t"
tests/packaging/dkms.sh "$ver" "$t" "$(scripts/kver.sh)"
tests/packaging/deb.sh "$ver" "$t" "$(scripts/kver.sh)"
echo "test-packages: passed in $((SECONDS - start)) s"
