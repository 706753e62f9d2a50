#!/bin/bash
# make install / make uninstall into a DESTDIR: exactly the files it
# should write, a program linked against the DESTDIR copy through
# pkg-config (PKG_CONFIG_SYSROOT_DIR) shared and with the static
# library, the man page covering every subcommand, and an uninstall that
# leaves no file behind.
set -euo pipefail
ver=$1 t=$2
. tests/packaging/lib.sh
dest=$t/destdir
rm -rf "$dest" && mkdir -p "$dest"
make --no-print-directory install DESTDIR="$dest" PREFIX=/usr/local >"$t/install.log"
want="/usr/local/bin/dial9
/usr/local/include/dial9.h
/usr/local/include/linux/dial9.h
/usr/local/lib/libdial9.a
/usr/local/lib/libdial9.so
/usr/local/lib/libdial9.so.0
/usr/local/lib/libdial9.so.$ver
/usr/local/lib/pkgconfig/dial9.pc
/usr/local/share/man/man1/dial9.1"
got=$(files_under "$dest")
[ "$got" = "$want" ] || fail "make install wrote: $got"
ok "make install DESTDIR PREFIX=/usr/local: the 9 files"
lib=$dest/usr/local/lib
[ "$(readlink "$lib/libdial9.so")" = libdial9.so.0 ] &&
	[ "$(readlink "$lib/libdial9.so.0")" = "libdial9.so.$ver" ] ||
	fail "symlinks: $(ls -l "$lib")"
readelf -d "$lib/libdial9.so.$ver" | has 'SONAME.*\[libdial9\.so\.0\]' ||
	fail "no soname libdial9.so.0"
grep -qx 'prefix=/usr/local' "$lib/pkgconfig/dial9.pc" || fail "pc prefix"
ok "soname libdial9.so.0, its links, pkg-config prefix /usr/local"

export PKG_CONFIG_SYSROOT_DIR=$dest PKG_CONFIG_LIBDIR=$lib/pkgconfig
[ "$(pkg-config --modversion dial9)" = "$ver" ] || fail "pkg-config version"
cflags=$(pkg-config --cflags dial9)
# shellcheck disable=SC2086
$CC $PROG_CFLAGS $cflags -o "$t/prog-shared" tests/packaging/prog.c \
	$(pkg-config --libs dial9) -Wl,-rpath,"$lib"
ldd "$t/prog-shared" | has "$lib/libdial9.so.0" ||
	fail "prog-shared does not use the DESTDIR copy: $(ldd "$t/prog-shared")"
"$t/prog-shared" "$t/rec-shared" | has "^recorded [1-9].*, dial9 $ver\$" ||
	fail "prog-shared does not record, or its <dial9.h> is not version $ver"
ok "linked with pkg-config --cflags --libs against the DESTDIR copy; it records"
# The static library, and what pkg-config --static says it needs.
static_libs=$(pkg-config --static --libs dial9 | sed 's/-ldial9\b/-l:libdial9.a/')
# shellcheck disable=SC2086
$CC $PROG_CFLAGS $cflags -o "$t/prog-static-lib" tests/packaging/prog.c $static_libs
! ldd "$t/prog-static-lib" | has libdial9 || fail "prog-static-lib needs libdial9.so"
"$t/prog-static-lib" "$t/rec-static" | has '^recorded [1-9]' || fail "prog-static-lib"
ok "linked with libdial9.a and pkg-config --static --libs ($static_libs); it records"
# Only the macros, started by DIAL9_ENABLED=1: the linker must still
# take the library's constructor (its object) from libdial9.a.
# shellcheck disable=SC2086
$CC $PROG_CFLAGS $cflags -o "$t/macros-static-lib" tests/packaging/macros.c $static_libs
rm -rf "$t/rec-macros"
DIAL9_ENABLED=1 DIAL9_SCHED_ENABLED=0 DIAL9_TRACE_DIR="$t/rec-macros" "$t/macros-static-lib" 2>"$t/macros.err" ||
	fail "macros-static-lib: exit status: $(cat "$t/macros.err")"
"$dest/usr/local/bin/dial9" dump "$t/rec-macros" | has '"pkgtest.macros"' ||
	fail "a macros-only program linked with libdial9.a recorded nothing: $(cat "$t/macros.err")"
ok "a program of macros alone, linked with libdial9.a, records with DIAL9_ENABLED=1"
rm -rf "$t/rec-s3"
AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=test "$t/prog-shared" --s3 "$t/rec-s3" |
	grep -qx 's3: started' || fail "the S3 build does not start an S3 recorder"
ok "this build starts a recorder with S3 upload"

"$dest/usr/local/bin/dial9" --version | has -x "dial9 $ver" || fail "dial9 --version"
man_page=$dest/usr/local/share/man/man1/dial9.1
warn=$(LC_ALL=C.UTF-8 MANWIDTH=80 man --warnings -E UTF-8 -l "$man_page" 2>&1 >/dev/null)
[ -z "$warn" ] || fail "man page warnings: $warn"
for c in $(help_commands "$dest/usr/local/bin/dial9"); do
	grep -q "^\\\\fB$c\\b" "$man_page" || fail "dial9.1 does not document 'dial9 $c'"
done
ok "dial9 --version; dial9(1) renders without warnings and has every subcommand"

make --no-print-directory uninstall DESTDIR="$dest" PREFIX=/usr/local >>"$t/install.log"
left=$(files_under "$dest")
[ -z "$left" ] || fail "make uninstall left: $left"
ok "make uninstall: no file left under DESTDIR"
