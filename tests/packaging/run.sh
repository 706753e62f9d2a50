#!/bin/bash
# make test-packages: the version in one place, make install into a
# DESTDIR, the build without S3, make dkms-install, the Debian packages
# (each script says what it checks), each a test of tests/run-tests.sh.
# Needs root for DKMS and packages.
set -euo pipefail
ver=$1 t=$2
cd "$(dirname "$0")/../.."
mkdir -p "$t"
t=$(cd "$t" && pwd)
kver=$(scripts/kver.sh)
exec tests/run-tests.sh test-packages -t 1200 \
	"version: tests/packaging/version.sh $ver" \
	"install: tests/packaging/install.sh $ver $t" \
	"nos3: tests/packaging/nos3.sh $ver $t" \
	"dkms: tests/packaging/dkms.sh $ver $t $kver" \
	"deb: tests/packaging/deb.sh $ver $t $kver"
