#!/bin/sh
# SPDX-License-Identifier: MIT
# symbols.sh DIR - stack frames named through libelf (lib/symbols/symbols.c,
# make test-tools): a PIE executable, a non-PIE one and a shared library
# built here and run, their mappings as the kernel laid them out (load
# bias); stripped copies with a separate debug file found by build-id
# and by .gnu_debuglink (its CRC checked); the vDSO; a perf JIT map; and
# what cannot be named (a file gone, stripped without debug info, another
# build-id, corrupt ELF) as object+0xoffset with a note that says why.
# DIR holds dial9 (under ASan+UBSan) and mktrace.
set -eu
. tests/tools/lib.sh
T=$B/symbols
CC=${CC:-cc}

rm -rf "$T"
mkdir -p "$T/debug" "$T/maps" "$T/link/.debug"

# The file offset of symbol $2 of ELF file $1 (+ $3): through the PT_LOAD
# segment holding its address, as the kernel maps it (those of file $4 if
# given: a debug file's are not the file's).
fileoff() {
	a=$(nm "$1" 2>/dev/null | awk -v s="$2" '{ sub(/@.*/, "", $3) } $3 == s { print $1; exit }')
	[ -n "$a" ] || a=$(nm -D "$1" | awk -v s="$2" '{ sub(/@.*/, "", $3) } $3 == s { print $1; exit }')
	readelf -lW "${4:-$1}" 2>/dev/null | awk '$1 == "LOAD" { print $2, $3, $5 }' |
	while read -r o v z; do
		if [ $((0x$a)) -ge $((v)) ] && [ $((0x$a)) -lt $((v + z)) ]; then
			printf '%x\n' $((0x$a - v + o + ${3:-0}))
			break
		fi
	done
}
# The build-id of ELF file $1, in hex.
buildid() { readelf -n "$1" | sed -n 's/^ *Build ID: //p'; }

step "built and run here: PIE, non-PIE and a shared library (load bias)"
# (the library's own function's address: a non-PIE program's is its PLT)
cat > "$T/symlib.c" <<'EOF'
#include <stdint.h>
__attribute__((noinline)) static int symlib_inner(int x)
{
	__asm__ volatile("nop; nop; nop; nop; nop; nop; nop; nop" ::: "memory");
	return x + 1;
}
uintptr_t symlib_fn(int x);
uintptr_t symlib_fn(int x)
{
	return symlib_inner(x) ? (uintptr_t)symlib_inner : 0;
}
EOF
cat > "$T/symprog.c" <<'EOF'
#include <stdint.h>
#include <stdio.h>
#include <string.h>
uintptr_t symlib_fn(int x);
__attribute__((noinline)) int symprog_fn(int x)
{
	__asm__ volatile("nop; nop; nop; nop; nop; nop; nop; nop" ::: "memory");
	return x * 2;
}
/* "TID PATH auto START END OFFSET IP" for the mapping holding ip */
static void line(int tid, uintptr_t ip)
{
	char l[4096], path[4096];
	unsigned long long a, b, o;
	FILE *f = fopen("/proc/self/maps", "r");

	while (f && fgets(l, sizeof(l), f))
		if (sscanf(l, "%llx-%llx %*s %llx %*s %*s %4095s", &a, &b, &o,
			   path) == 4 && ip >= a && ip < b)
			printf("%d %s auto %llx %llx %llx %llx\n", tid, path, a,
			       b, o, (unsigned long long)ip);
	if (f)
		fclose(f);
}
int main(int argc, char **argv)
{
	int t = argc > 1 ? (int)strlen(argv[1]) : 0;

	line(1001 + 2 * t, (uintptr_t)symprog_fn + 4);
	line(1002 + 2 * t, symlib_fn(0) + 4);
	return symprog_fn(1) == 2 ? 0 : 1;
}
EOF
$CC -O1 -g -fPIC -shared -o "$T/libsymlib.so" "$T/symlib.c"
$CC -O1 -g -fPIE -pie -o "$T/symprog" "$T/symprog.c" -L"$T" -lsymlib \
	-Wl,-rpath,"$PWD/$T"
$CC -O1 -g -fno-pie -no-pie -o "$T/symprog-nopie" "$T/symprog.c" -L"$T" \
	-lsymlib -Wl,-rpath,"$PWD/$T"
"$T/symprog" > "$T/frames.in"
"$T/symprog-nopie" x >> "$T/frames.in"
[ "$(wc -l < "$T/frames.in")" = 4 ] || bad "symprog: $(cat "$T/frames.in")"

step "stripped copies with separate debug files"
# by build-id: DIAL9_DEBUG_DIR/.build-id/xx/yyyy.debug
cp "$T/symprog" "$T/symprog-bid"
objcopy --only-keep-debug "$T/symprog" "$T/symprog.debug"
objcopy --strip-all "$T/symprog-bid"
id=$(buildid "$T/symprog")
mkdir -p "$T/debug/.build-id/$(echo "$id" | cut -c1-2)"
cp "$T/symprog.debug" "$T/debug/.build-id/$(echo "$id" | cut -c1-2)/$(echo "$id" | cut -c3-).debug"
# by .gnu_debuglink: beside the file, and in .debug/ beside it (their
# build-id is another's, so that only the link finds them)
$CC -O1 -g -o "$T/link/prog-a" "$T/symprog.c" -L"$T" -lsymlib
cp "$T/link/prog-a" "$T/link/prog-b"
cp "$T/link/prog-a" "$T/link/prog-c"
objcopy --only-keep-debug "$T/link/prog-a" "$T/link/prog-a.dbg"
objcopy --strip-all --add-gnu-debuglink="$T/link/prog-a.dbg" "$T/link/prog-a"
objcopy --only-keep-debug "$T/link/prog-b" "$T/link/.debug/prog-b.dbg"
objcopy --strip-all --add-gnu-debuglink="$T/link/.debug/prog-b.dbg" \
	"$T/link/prog-b"
# a debug file that changed since the link was made: another CRC
objcopy --only-keep-debug "$T/link/prog-c" "$T/link/prog-c.dbg"
objcopy --strip-all --add-gnu-debuglink="$T/link/prog-c.dbg" "$T/link/prog-c"
cp "$T/symprog.debug" "$T/link/prog-c.dbg"
# stripped, no build-id, no debug file anywhere
cp "$T/symprog-bid" "$T/symprog-nodebug"
objcopy --remove-section=.note.gnu.build-id "$T/symprog-nodebug"
off=$(fileoff "$T/symprog" symprog_fn 4)
offl=$(fileoff "$T/link/prog-a.dbg" symprog_fn 4 "$T/link/prog-a")
ip=$(printf %x $((0x10000000 + 0x$off)))
ipl=$(printf %x $((0x10000000 + 0x$offl)))
cat >> "$T/frames.in" <<EOF
1501 $PWD/$T/symprog-bid auto 10000000 10100000 0 $ip
1101 $PWD/$T/symprog-bid auto 10000000 10100000 0 $ip
1102 $PWD/$T/link/prog-a auto 10000000 10100000 0 $ipl
1103 $PWD/$T/link/prog-b auto 10000000 10100000 0 $ipl
1104 $PWD/$T/link/prog-c auto 10000000 10100000 0 $ipl
1105 $PWD/$T/symprog-nodebug - 10000000 10100000 0 $ip
EOF

step "what cannot be named: gone, another build-id, corrupt"
cp "$T/symprog" "$T/symprog-other"
head -c 1500 "$T/symprog" > "$T/truncated"
cp "$T/symprog" "$T/badshdr"
# e_shoff (8 bytes at 0x28) far past the end of the file
printf '\377\377\377\377\377\377\000\000' |
	dd of="$T/badshdr" bs=1 seek=40 conv=notrunc 2>/dev/null
# sparse: the extended section count (e_shnum 0, section 0's sh_size)
# says 50 million, and the file (mostly a hole) is long enough to hold
# them, so only the count can tell
cp "$T/symprog" "$T/sparse"
shoff=$(od -An -t u8 -j 40 -N 8 "$T/sparse" | tr -d ' ')
printf '\000\000' | dd of="$T/sparse" bs=1 seek=60 conv=notrunc 2>/dev/null
printf '\200\360\372\002\000\000\000\000' |
	dd of="$T/sparse" bs=1 seek=$((shoff + 32)) conv=notrunc 2>/dev/null
truncate -s $((shoff + 50000000 * 64 + 4096)) "$T/sparse"
cat >> "$T/frames.in" <<EOF
1206 $PWD/$T/sparse - 10000000 10100000 0 $ip
EOF
cat >> "$T/frames.in" <<EOF
1201 /nonexistent/dial9/libgone.so abcdef 10000000 10100000 0 10001234
1202 $PWD/$T/symprog-other 0123456789abcdef 10000000 10100000 0 $ip
1203 $PWD/$T/truncated - 10000000 10100000 0 $ip
1204 $PWD/$T/badshdr - 10000000 10100000 0 $ip
1205 /proc/version - 10000000 10100000 0 10001234
EOF

step "the vDSO, and a perf JIT map"
vdso=0
if "$B/mktrace" vdso "$T/vdso.img"; then
	vdso=1
	voff=$(fileoff "$T/vdso.img" __vdso_clock_gettime 3)
	echo "1301 [vdso] vdso 7fff00000000 7fff00002000 0 $(printf %x $((0x7fff00000000 + 0x$voff)))" >> "$T/frames.in"
	echo "1302 [vdso] 00112233445566778899 7fff00000000 7fff00002000 0 7fff00000010" >> "$T/frames.in"
fi
printf '7f0000001000 100 jit_compiled_fn\n7f0000002000 40 LazyCompile:*foo bar.js:1\n' \
	> "$T/maps/perf-1401.map"
echo "1401 - - 0 0 0 7f0000001010,7f0000002004" >> "$T/frames.in"
echo "1402 - - 0 0 0 7f0000001010" >> "$T/frames.in"
# a map of another user (as one planted in /tmp would be): not trusted,
# where root can make one; and a line too long to hold, then a good one
if [ "$(id -u)" = 0 ]; then
	printf '7f0000001000 100 spoofed_fn\n' > "$T/maps/perf-1403.map"
	chown 65534 "$T/maps/perf-1403.map"
	echo "1403 - - 0 0 0 7f0000001010" >> "$T/frames.in"
fi
{ printf '7f0000003000 10 '; head -c 10000 /dev/zero | tr '\0' x; printf '\n7f0000001000 100 after_long_fn\n'; } \
	> "$T/maps/perf-1404.map"
echo "1404 - - 0 0 0 7f0000001010" >> "$T/frames.in"

"$B/mktrace" frames "$T" < "$T/frames.in"
DIAL9_DEBUG_DIR=$PWD/$T/debug/ DIAL9_PERF_MAP_DIR=$PWD/$T/maps \
	"$D9" sched --explain --min-delay 1 --json "$T/frames" \
	> "$T/frames.json" 2> "$T/frames.err" || bad "sched --explain: exit status"
# "TID FRAMES..." per delay
node -e '
const d = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
for (const x of d.delays) console.log(x.tid + " " + (x.stack || []).join(" | "));
' "$T/frames.json" | sort > "$T/frames.txt"
got() { sed -n "s/^$1 //p" "$T/frames.txt"; }
note() { grep -F "$1" "$T/frames.err" | grep -qF "$2" || bad "no note '$2' on $1: $(cat "$T/frames.err")"; }

[ "$(got 1001)" = "symprog_fn+0x4 (symprog)" ] || bad "PIE: $(got 1001)"
[ "$(got 1002)" = "symlib_inner+0x4 (libsymlib.so)" ] || bad "shared library: $(got 1002)"
[ "$(got 1003)" = "symprog_fn+0x4 (symprog-nopie)" ] || bad "non-PIE: $(got 1003)"
[ "$(got 1004)" = "symlib_inner+0x4 (libsymlib.so)" ] || bad "shared library (non-PIE): $(got 1004)"
[ "$(got 1101)" = "symprog_fn+0x4 (symprog-bid)" ] || bad "debug file by build-id: $(got 1101)"
[ "$(got 1102)" = "symprog_fn+0x4 (prog-a)" ] || bad "debuglink beside: $(got 1102)"
[ "$(got 1103)" = "symprog_fn+0x4 (prog-b)" ] || bad "debuglink in .debug/: $(got 1103)"
[ "$(got 1104)" = "prog-c+0x$offl" ] || bad "debuglink, wrong CRC: $(got 1104)"
note prog-c "prog-c.dbg: its CRC is not the debuglink's"
[ "$(got 1105)" = "symprog-nodebug+0x$off" ] || bad "stripped: $(got 1105)"
note symprog-nodebug "not named: stripped, and no debug file"
ok "PIE, non-PIE, a shared library; debug files by build-id and debuglink"

[ "$(got 1201)" = "libgone.so+0x1234" ] || bad "gone: $(got 1201)"
note libgone.so "not named: no such file here"
[ "$(got 1202)" = "symprog-other+0x$off" ] || bad "other build-id: $(got 1202)"
note symprog-other "not named: build-id mismatch"
[ "$(got 1203)" = "truncated+0x$off" ] || bad "truncated: $(got 1203)"
note "/truncated" "not named: corrupt ELF file"
[ "$(got 1204)" = "badshdr+0x$off" ] || bad "bad section headers: $(got 1204)"
note "/badshdr" "not named: corrupt ELF file"
[ "$(got 1205)" = "version+0x1234" ] || bad "a /proc file: $(got 1205)"
[ "$(got 1206)" = "sparse+0x$off" ] || bad "sparse ELF: $(got 1206)"
note "/sparse" "more section or program headers than any object has"
note "/proc/version" "pseudo filesystem"
ok "gone, another build-id, truncated, bad section headers, /proc, sparse"

if [ "$vdso" = 1 ]; then
	case $(got 1301) in
	"__vdso_clock_gettime+0x3 ([vdso])" | "clock_gettime+0x3 ([vdso])") ;;
	*) bad "vDSO: $(got 1301)" ;;
	esac
	[ "$(got 1302)" = "[vdso]+0x10" ] || bad "vDSO, another build-id: $(got 1302)"
	note "[vdso]" "no vDSO image of its build-id here"
fi
[ "$(got 1401)" = "jit_compiled_fn+0x10 (perf-1401.map) | LazyCompile:*foo bar.js:1+0x4 (perf-1401.map)" ] ||
	bad "JIT map: $(got 1401)"
[ "$(got 1402)" = "0x7f0000001010" ] || bad "no JIT map: $(got 1402)"
note "process 1402" "perf-1402.map: no such file here"
if [ "$(id -u)" = 0 ]; then
	[ "$(got 1403)" = "0x7f0000001010" ] || bad "another user's JIT map: $(got 1403)"
	note "process 1403" "neither this user nor root: not trusted"
fi
[ "$(got 1404)" = "after_long_fn+0x10 (perf-1404.map)" ] || bad "JIT map, long line: $(got 1404)"
grep -qF "perf-1404.map: 1 lines longer than 4096 bytes skipped" "$T/frames.err" ||
	bad "long JIT line not said: $(cat "$T/frames.err")"
ok "vDSO, perf JIT map (another user's refused, long lines skipped)"

step "dial9 flame names the same frames"
DIAL9_DEBUG_DIR=$T/debug DIAL9_PERF_MAP_DIR=$T/maps "$D9" flame "$T/frames" \
	> "$T/flame.txt" 2>/dev/null || bad "flame: exit status"
grep -qx '? 1101;symprog_fn 20' "$T/flame.txt" &&
	grep -qx '? 1401;LazyCompile:\*foo bar.js:1;jit_compiled_fn 20' "$T/flame.txt" ||
	bad "flame: $(cat "$T/flame.txt")"
ok "flame"

step "sched --explain: the span open on the thread, the waker's stack"
"$B/mktrace" why "$T"
"$D9" sched --explain --min-delay 1 "$T/why" 2>/dev/null |
	sed -n '/^delays of/,/^(each delay/p' | sed '$d' |
	grep -v 'ran meanwhile' > "$T/why.txt"
cat > "$T/why-want.txt" <<'EOF'
delays of 0.001 ms or more: 3
  700 (app-main): 0.010 ms from 1000.000040 s on CPU 0, preempted
    in span request (since 1000.000005 s)
    stack at its switch-out (1000.000040 s):
      #0  app+0x600
  700 (app-main): 0.005 ms from 1000.000020 s on CPU 0, woken by ? (601/601)
    in span db.query (since 1000.000008 s)
    stack at its switch-out (1000.000010 s):
      #0  app+0x500
      #1  app+0x400
    its waker's stack as it woke it (1000.000020 s):
      #0  waker+0x100
      #1  waker+0x200
  700 (app-main): 0.003 ms from 1000.000060 s on CPU 0, preempted
    stack at its switch-out (1000.000060 s):
      #0  app+0x700
EOF
diff -u "$T/why-want.txt" "$T/why.txt" || bad "sched --explain: span, waker stack (text)"
"$D9" sched --explain --min-delay 1 --json "$T/why" > "$T/why.json" 2>/dev/null
node -e '
const d = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8")).delays;
const got = d.map(x => JSON.stringify([x.wait_ns, x.span, x.waker_stack])).join("\n");
const want = [
	[5000, { name: "db.query", start_ns: 1000000008000 }, ["waker+0x100", "waker+0x200"]],
	[10000, { name: "request", start_ns: 1000000005000 }, null],
	[3000, null, null],
].map(x => JSON.stringify(x)).join("\n");
if (got !== want) { console.log(got); process.exit(1); }
' "$T/why.json" || bad "sched --explain: span, waker_stack (JSON)"
ok "span and waker stack"

step "dial9 report: the explanation shows the span and both stacks"
"$D9" report --html "$T/why" -o "$T/why.html" 2>/dev/null || bad "report: exit status"
node tests/tools/report_browser.js "$T/why.html" "$T/why.png" \
	'{"threads":["app-main"],"click":1,
	  "why":["waited 5.0 \u00b5s on CPU 0: woken by ?",
	         "In span db.query (since 12.0 \u00b5s before the wait).",
	         "Stack at its switch-out:#0 app+0x500#1 app+0x400",
	         "Its waker'"'"'s stack as it woke it:#0 waker+0x100#1 waker+0x200"]}' ||
	bad "report: span and stacks in the explanation"
ok "report: span, stack, waker's stack"

step "the worker's symbol table: names made here, read with the files gone"
mkdir -p "$T/tab"
DIAL9_DEBUG_DIR=$PWD/$T/debug DIAL9_PERF_MAP_DIR=$PWD/$T/maps \
	"$B/mktrace" symtab "$T/frames/00000001.dial9" "$T/tab/00000001.dial9" \
	> "$T/tab.out" || bad "mktrace symtab: $(cat "$T/tab.out")"
# every ELF file, debug file and map of the frames away (another host)
mkdir -p "$T/away"
mv "$T/symprog" "$T/symprog-nopie" "$T/libsymlib.so" "$T/symprog-bid" \
	"$T/debug" "$T/link" "$T/maps" "$T/away/"
DIAL9_DEBUG_DIR=$PWD/$T/nodebug DIAL9_PERF_MAP_DIR=$PWD/$T/nomaps \
	"$D9" sched --explain --min-delay 1 --json "$T/tab" \
	> "$T/frames.json" 2> "$T/frames.err" || bad "sched --explain (table): exit status"
node -e '
const d = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
for (const x of d.delays) console.log(x.tid + " " + (x.stack || []).join(" | "));
' "$T/frames.json" | sort > "$T/frames.txt"
[ "$(got 1001)" = "symprog_fn+0x4 (symprog)" ] || bad "table, PIE: $(got 1001)"
[ "$(got 1002)" = "symlib_inner+0x4 (libsymlib.so)" ] || bad "table, shared library: $(got 1002)"
[ "$(got 1003)" = "symprog_fn+0x4 (symprog-nopie)" ] || bad "table, non-PIE: $(got 1003)"
[ "$(got 1101)" = "symprog_fn+0x4 (symprog-bid)" ] || bad "table, debug file by build-id: $(got 1101)"
[ "$(got 1102)" = "symprog_fn+0x4 (prog-a)" ] || bad "table, debuglink: $(got 1102)"
[ "$(got 1401)" = "jit_compiled_fn+0x10 (perf-1401.map) | LazyCompile:*foo bar.js:1+0x4 (perf-1401.map)" ] ||
	bad "table, JIT map: $(got 1401)"
[ "$(got 1201)" = "libgone.so+0x1234" ] || bad "table, gone: $(got 1201)"
if [ "$vdso" = 1 ]; then
	case $(got 1301) in
	"__vdso_clock_gettime+0x3 ([vdso])" | "clock_gettime+0x3 ([vdso])") ;;
	*) bad "table, vDSO: $(got 1301)" ;;
	esac
fi
grep -q "frames named from the trace's symbol table (made on the recording host), 0 from the files here" "$T/frames.err" ||
	bad "no note of the table: $(cat "$T/frames.err")"
grep -qF "the recording host did not name 1 frame in /nonexistent/dial9/libgone.so: no such file here" "$T/frames.err" ||
	bad "no note of the recording host's misses: $(cat "$T/frames.err")"
DIAL9_DEBUG_DIR=$PWD/$T/nodebug DIAL9_PERF_MAP_DIR=$PWD/$T/nomaps \
	"$D9" flame "$T/tab" > "$T/flame.txt" 2> "$T/flame.err" || bad "flame (table): exit status"
grep -qx '? 1101;symprog_fn 20' "$T/flame.txt" &&
	grep -qx '? 1401;LazyCompile:\*foo bar.js:1;jit_compiled_fn 20' "$T/flame.txt" ||
	bad "flame (table): $(cat "$T/flame.txt")"
grep -q "named from the trace's symbol table" "$T/flame.err" ||
	bad "flame (table): no note: $(cat "$T/flame.err")"
# a CPU sample's frames are in the table too
DIAL9_DEBUG_DIR=$PWD/$T/nodebug DIAL9_PERF_MAP_DIR=$PWD/$T/nomaps \
	"$D9" flame --on-cpu "$T/tab" > "$T/flame-cpu.txt" 2>/dev/null ||
	bad "flame --on-cpu (table): exit status"
grep -qx '? 1501;symprog_fn 1' "$T/flame-cpu.txt" ||
	bad "flame --on-cpu (table): a sample's frame not named: $(cat "$T/flame-cpu.txt")"
"$D9" flame --no-symbols "$T/tab" 2>/dev/null | grep -q '^? 1101;symprog-bid+0x' ||
	bad "flame --no-symbols (table): $(cat "$T/flame.txt")"
ok "sched --explain and flame name the frames from the trace's table"

finish symbols
