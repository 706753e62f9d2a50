#!/bin/bash
# The VERSION file is the version: the Makefile reads it (DIAL9_VERSION,
# $ver here), the library, the command and the module (Kbuild) are given
# it, dkms.conf, dial9.pc, <dial9.h> and debian/changelog have it written
# in where they are installed.  None of those says it by itself; what
# they are made into says it (the other steps: pkg-config, dial9
# --version, prog's DIAL9_VERSION_STRING, modinfo, the packages).
set -euo pipefail
ver=$1
. tests/packaging/lib.sh
[ "$ver" = "$(cat VERSION)" ] || fail "the Makefile's version $ver is not VERSION's"
for f in Makefile Kbuild dkms.conf kmod/main.c lib/include/dial9.h lib/dial9.pc.in \
	lib/lib.mk packaging/packaging.mk debian/rules; do
	if grep -qF "$ver" "$f"; then fail "$f says version $ver itself"; fi
done
ok "version $ver in VERSION alone"
