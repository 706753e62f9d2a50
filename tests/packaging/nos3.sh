#!/bin/bash
# make DIAL9_S3=0: a library and a dial9 without S3 upload.  Neither
# needs libcurl or libcrypto, a fully static program links against the
# installed copy, and asking for S3 fails with an error that says why:
# dial9_start() (-EOPNOTSUPP), the environment (DIAL9_S3_BUCKET), and
# dial9 ls / fetch.
set -euo pipefail
ver=$1 t=$2
. tests/packaging/lib.sh
b=$t/nos3-build dest=$t/nos3-dest
rm -rf "$dest" "$t"/rec-nos3*
make --no-print-directory BUILD="$b" DIAL9_S3=0 lib tools >"$t/nos3.log"
make --no-print-directory BUILD="$b" DIAL9_S3=0 install DESTDIR="$dest" \
	PREFIX=/usr/local >>"$t/nos3.log"
lib=$dest/usr/local/lib
if readelf -d "$lib/libdial9.so.$ver" | grep -E 'NEEDED.*(curl|crypto|ssl)'; then
	fail "libdial9.so (DIAL9_S3=0) needs libcurl or libcrypto"
fi
if nm "$lib/libdial9.a" | grep -E ' U (curl_|EVP_)'; then
	fail "libdial9.a (DIAL9_S3=0) refers to libcurl or libcrypto"
fi
if grep -E -- '-l(curl|crypto)' "$lib/pkgconfig/dial9.pc"; then
	fail "dial9.pc (DIAL9_S3=0) asks for libcurl or libcrypto"
fi
ok "DIAL9_S3=0: neither libdial9.so, libdial9.a nor dial9.pc needs libcurl or libcrypto"

export PKG_CONFIG_SYSROOT_DIR=$dest PKG_CONFIG_LIBDIR=$lib/pkgconfig
# shellcheck disable=SC2046
$CC $PROG_CFLAGS -static $(pkg-config --cflags dial9) -o "$t/prog-nos3" \
	tests/packaging/prog.c $(pkg-config --static --libs dial9)
file "$t/prog-nos3" | has 'statically linked' || fail "prog-nos3 is not static"
"$t/prog-nos3" "$t/rec-nos3" | has '^recorded [1-9]' || fail "prog-nos3 does not record"
ok "a fully static program (cc -static, pkg-config --static) records"
# shellcheck disable=SC2046
$CC $PROG_CFLAGS -static $(pkg-config --cflags dial9) -o "$t/macros-nos3" \
	tests/packaging/macros.c $(pkg-config --static --libs dial9)
rm -rf "$t/rec-nos3-macros"
DIAL9_ENABLED=1 DIAL9_SCHED_ENABLED=0 DIAL9_TRACE_DIR="$t/rec-nos3-macros" "$t/macros-nos3" 2>"$t/macros-nos3.err" ||
	fail "macros-nos3: exit status: $(cat "$t/macros-nos3.err")"
"$dest/usr/local/bin/dial9" dump "$t/rec-nos3-macros" | has '"pkgtest.macros"' ||
	fail "a fully static macros-only program recorded nothing: $(cat "$t/macros-nos3.err")"
ok "a fully static program of macros alone records with DIAL9_ENABLED=1"

set +e
out=$(AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=test \
	"$t/prog-nos3" --s3 "$t/rec-nos3-s3" 2>"$t/nos3-s3.err")
rc=$?
set -e
[ $rc = 3 ] && [ "$out" = "s3: Operation not supported" ] ||
	fail "dial9_start with S3 in a DIAL9_S3=0 build: rc $rc, '$out'"
grep -q 'built without it (make DIAL9_S3=0)' "$t/nos3-s3.err" ||
	fail "no message says why: $(cat "$t/nos3-s3.err")"
ok "dial9_start with S3 upload: -EOPNOTSUPP, and the log says it was built without it"
DIAL9_ENABLED=1 DIAL9_S3_BUCKET=pkgtest DIAL9_TRACE_DIR="$t/rec-nos3-env" \
	DIAL9_SCHED_ENABLED=0 AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=test \
	"$t/prog-nos3" "$t/rec-nos3-2" >/dev/null 2>"$t/nos3-env.err"
grep -q 'built without it (make DIAL9_S3=0)' "$t/nos3-env.err" ||
	fail "DIAL9_S3_BUCKET in a DIAL9_S3=0 build is not reported: $(cat "$t/nos3-env.err")"
[ ! -e "$t/rec-nos3-env" ] || fail "DIAL9_S3_BUCKET: it recorded without uploading"
ok "DIAL9_S3_BUCKET in the environment: an error, and nothing recorded"

d9=$dest/usr/local/bin/dial9
"$d9" --version | has -x "dial9 $ver (without S3)" || fail "dial9 --version: $("$d9" --version)"
for c in ls fetch; do
	set +e
	"$d9" "$c" s3://pkgtest -o "$t/fetched" >/dev/null 2>"$t/nos3-$c.err"
	rc=$?
	set -e
	[ $rc = 1 ] && grep -q "dial9 $c: this dial9 was built without S3 support" \
		"$t/nos3-$c.err" || fail "dial9 $c: rc $rc, $(cat "$t/nos3-$c.err")"
done
ok "dial9 ls / fetch say they were built without S3 (exit 1); --version says so"
