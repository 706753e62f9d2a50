#!/bin/sh
# Install everything dial9 needs from Debian, idempotently.
# Fast when all is present: one dpkg-query, no apt-get at all.
set -eu

PKGS="build-essential pkg-config clang llvm libclang-rt-14-dev
liburing-dev libelf-dev liblz4-dev lz4 zlib1g-dev libcurl4-openssl-dev libssl-dev
libcmocka-dev
liblttng-ust-dev lttng-tools
dkms kmod sparse qemu-system-x86 busybox-static cpio xz-utils e2fsprogs
linux-headers-cloud-amd64 linux-source-6.1
nodejs chromium time libxml2-utils
linux-perf trace-cmd bpftrace rt-tests stress-ng sysbench redis-tools
debhelper dh-dkms lintian adduser"

missing=""
for p in $PKGS; do
	st=$(dpkg-query -W -f='${db:Status-Abbrev}' "$p" 2>/dev/null || true)
	case "$st" in
	ii*) ;;
	*) missing="$missing $p" ;;
	esac
done

if [ -n "$missing" ]; then
	echo "deps: installing:$missing"
	export DEBIAN_FRONTEND=noninteractive
	apt-get -o DPkg::Lock::Timeout=600 update -q
	# shellcheck disable=SC2086
	apt-get -o DPkg::Lock::Timeout=600 install -y -q \
		--no-install-recommends $missing
fi

# npm: Debian's npm package, unless an npm came with the installed nodejs.
if ! command -v npm >/dev/null 2>&1; then
	echo "deps: installing: nodejs npm"
	export DEBIAN_FRONTEND=noninteractive
	apt-get -o DPkg::Lock::Timeout=600 update -q
	apt-get -o DPkg::Lock::Timeout=600 install -y -q --no-install-recommends \
		nodejs npm
fi
# From the npm registry, pinned by each package-lock.json: the S3 test
# server (s3rver, tests/s3) and DuckDB (@duckdb/node-api, tests/fleet).
# Nothing runs when their stamps are newer than the lock files.
scripts/npm-ci.sh tests/s3 tests/fleet

# Debian 12 ships a second kernel line, 6.12, in its main archive (as
# versioned packages only: no metapackage). Fleets run both, so the
# module is built and tested for the newest 6.12 cloud kernel too.
if ! scripts/kver.sh 6.12 >/dev/null 2>&1; then
	pick() { apt-cache pkgnames linux-headers-6.12 2>/dev/null |
		grep -- '+deb12-cloud-amd64$' | sort -V | tail -n1; }
	h=$(pick)
	if [ -z "$h" ]; then
		apt-get -o DPkg::Lock::Timeout=600 update -q
		h=$(pick)
	fi
	[ -n "$h" ] || { echo "deps: no linux-headers-6.12.*+deb12-cloud-amd64 in apt" >&2; exit 1; }
	echo "deps: installing: $h"
	DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 \
		install -y -q --no-install-recommends "$h"
fi

# The VM boots the kernels matching the installed cloud headers. Only the
# vmlinuz is needed: download and unpack the image package (seconds)
# instead of installing it (initramfs-tools, ~90 s).
CACHE=${DIAL9_CACHE:-build/cache}
mkdir -p "$CACHE"
for KVER in $(scripts/kver.sh) $(scripts/kver.sh 6.12); do
	[ -f "$CACHE/vmlinuz-$KVER" ] && continue
	# The 6.12 headers depend on their image, so it may be installed.
	if [ -r "/boot/vmlinuz-$KVER" ]; then
		cp "/boot/vmlinuz-$KVER" "$CACHE/vmlinuz-$KVER"
		continue
	fi
	echo "deps: fetching linux-image-$KVER for the test VM"
	tmp=$(mktemp -d)
	chmod 755 "$tmp"
	(cd "$tmp" && apt-get -o DPkg::Lock::Timeout=600 download \
		"linux-image-$KVER" >/dev/null 2>&1) || {
		apt-get -o DPkg::Lock::Timeout=600 update -q
		(cd "$tmp" && apt-get download "linux-image-$KVER")
	}
	dpkg-deb -x "$tmp"/linux-image-*.deb "$tmp/x"
	cp "$tmp/x/boot/vmlinuz-$KVER" "$CACHE/vmlinuz-$KVER"
	rm -rf "$tmp"
done

# kselftest harness and checkpatch come from Debian's linux-source-6.1,
# unpacked once into the cache (never into the tree).
KS="$CACHE/linux-source"
if [ ! -f "$KS/.done" ]; then
	echo "deps: extracting kselftest harness and checkpatch from linux-source-6.1"
	rm -rf "$KS"
	mkdir -p "$KS"
	tar -xJf /usr/src/linux-source-6.1.tar.xz -C "$KS" --strip-components=1 \
		linux-source-6.1/tools/testing/selftests/kselftest_harness.h \
		linux-source-6.1/tools/testing/selftests/kselftest.h \
		linux-source-6.1/scripts/checkpatch.pl \
		linux-source-6.1/scripts/spelling.txt \
		linux-source-6.1/scripts/const_structs.checkpatch
	touch "$KS/.done"
fi
