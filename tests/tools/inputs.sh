#!/bin/sh
# SPDX-License-Identifier: MIT
# inputs.sh DIR - hostile inputs to the dial9 command (make test-tools):
# symbolic link loops in a trace directory, a FIFO named as a trace, an
# LZ4 bomb, names and strings that are not valid UTF-8.
# DIR holds dial9 (under ASan+UBSan) and mktrace.
set -eu
. tests/tools/lib.sh
T=$B/inputs

rm -rf "$T"
mkdir -p "$T/loop1" "$T/loop10" "$T/utf8"
"$B/mktrace" synth "$T/loop1"
cp "$T/loop1"/*.dial9 "$T/loop10/"

step "a symbolic link loop: each segment once"
ln -s . "$T/loop1/self"
rc=0
timeout 60 "$D9" info "$T/loop1" > "$T/loop1.txt" 2>&1 || rc=$?
[ "$rc" = 0 ] || bad "info loop1: exit $rc"
grep -q '^total: 2 files$' "$T/loop1.txt" ||
	bad "info loop1: $(grep '^total' "$T/loop1.txt" || echo 'no total')"
# ten links to the directory itself: 10^8 paths if loops are followed
for i in 0 1 2 3 4 5 6 7 8 9; do ln -s . "$T/loop10/l$i"; done
ln -s ../loop1 "$T/loop10/up"	# and a way into a loop from outside
rc=0
timeout 60 "$D9" info "$T/loop10" > "$T/loop10.txt" 2>&1 || rc=$?
[ "$rc" = 0 ] || bad "info loop10: exit $rc (124: hung)"
grep -q '^total: 4 files$' "$T/loop10.txt" ||
	bad "info loop10: $(grep '^total' "$T/loop10.txt" || echo 'no total')"
n=$(timeout 60 "$D9" dump "$T/loop10" | wc -l) || true
m=$(timeout 60 "$D9" dump "$T/loop1" "$T/loop10" | wc -l) || true
[ "$n" -gt 0 ] && [ "$n" = "$m" ] ||
	bad "dump loop10: $n lines, with loop1 named too: $m"
ok "link loops: each segment once ($n events)"

step "a FIFO named as a trace: refused at once"
mkfifo "$T/fifo.dial9"
for cmd in dump info "sched" "export --perfetto" "report --html"; do
	rc=0
	# shellcheck disable=SC2086
	timeout 20 "$D9" $cmd "$T/fifo.dial9" > /dev/null 2> "$T/fifo.err" ||
		rc=$?
	msg=$(cat "$T/fifo.err")
	[ "$rc" = 1 ] || bad "$cmd FIFO: exit $rc (124: blocked)"
	[ "$msg" = "dial9: $T/fifo.dial9: not a regular file or a directory" ] ||
		bad "$cmd FIFO: said '$msg'"
done
rc=0
timeout 20 "$D9" info /dev/null > /dev/null 2>&1 || rc=$?
[ "$rc" = 1 ] || bad "info /dev/null: exit $rc"
ok "FIFO and device refused"

step "an LZ4 bomb: refused within the decompression bound"
# 1 GiB of zeros (a sparse file): 4 MiB of LZ4, with and without the
# content size in the frame header
truncate -s 1G "$T/zeros"
lz4 -q -z -f --content-size "$T/zeros" "$T/sized.dial9.lz4"
lz4 -q -z -c --no-content-size < "$T/zeros" > "$T/stream.dial9.lz4"
rm -f "$T/zeros"
for f in sized stream; do
	for lim in "" 64; do
		rc=0
		DIAL9_INFLATE_MAX_MB=$lim /usr/bin/time -f '%M' -o "$T/$f.rss" \
			"$D9" info "$T/$f.dial9.lz4" > /dev/null 2> "$T/$f.err" ||
			rc=$?
		rss=$(tail -1 "$T/$f.rss")
		want=$(( ${lim:-256} * 1024 + 200 * 1024 ))	# KiB: ASan's own
		[ "$rc" = 1 ] || bad "LZ4 bomb $f: exit $rc"
		grep -q "decompresses to more than ${lim:-256} MiB (DIAL9_INFLATE_MAX_MB)" \
			"$T/$f.err" || bad "LZ4 bomb $f: said '$(cat "$T/$f.err")'"
		[ "$rss" -lt "$want" ] ||
			bad "LZ4 bomb $f (limit ${lim:-256}): max RSS $rss KiB"
		ok "LZ4 bomb $f, limit ${lim:-256} MiB: max RSS $rss KiB, exit $rc"
	done
done
# a real LZ4 segment still reads, and the same under a limit it fits
lz4 -q -z -c "$T/loop1/00000001.dial9" > "$T/utf8/one.dial9.lz4"
a=$("$D9" dump "$T/loop1/00000001.dial9" | wc -l)
b=$(DIAL9_INFLATE_MAX_MB=1 "$D9" dump "$T/utf8/one.dial9.lz4" | wc -l)
[ "$a" = "$b" ] || bad "LZ4 segment: $b events, not $a"
rm -f "$T/utf8/one.dial9.lz4" "$T/sized.dial9.lz4" "$T/stream.dial9.lz4"
# a frame header and nothing else (found by fuzz_cli_dump): cut short
printf '\004\042\115\030\154\100\305\001\000\000\000\000\000\000\322' \
	> "$T/header.dial9.lz4"
rc=0
"$D9" dump "$T/header.dial9.lz4" > /dev/null 2> "$T/header.err" || rc=$?
[ "$rc" = 1 ] && grep -q 'bad LZ4 data: No data available' "$T/header.err" ||
	bad "LZ4 frame header only: exit $rc: $(head -3 "$T/header.err")"
ok "LZ4 frame header only: exit $rc"

step "names cut inside a character, invalid bytes: strict UTF-8 JSON"
"$B/mktrace" utf8 "$T/utf8"
"$D9" dump "$T/utf8" > "$T/utf8.jsonl"
"$D9" export --perfetto "$T/utf8" -o "$T/utf8.json"
"$D9" sched --json "$T/utf8" > "$T/utf8-sched.jsonl"
"$D9" report --html "$T/utf8" -o "$T/utf8.html"
node -e '
const fs = require("fs");
const strict = new TextDecoder("utf-8", { fatal: true });
const text = (f) => strict.decode(fs.readFileSync(f));
const lines = text(process.argv[1]).split("\n").filter((l) => l);
const dump = lines.map((l) => JSON.parse(l));
const exp = JSON.parse(text(process.argv[2]));
const sched = text(process.argv[3]).split("\n").filter((l) => l)
	.map((l) => JSON.parse(l));
text(process.argv[4]);
const note = dump.find((e) => e.name === "note");
if (note.fields.text !== "bad \ufffd\ufffd, cut \ufffd\ufffd\ufffd, ok \u00e9")
	throw new Error("note: " + JSON.stringify(note.fields.text));
if (note.thread !== "worker-caf\ufffd")
	throw new Error("thread: " + JSON.stringify(note.thread));
const names = exp.traceEvents.filter((e) => e.name === "thread_name")
	.map((e) => e.args.name);
if (!names.includes("worker-caf\ufffd"))
	throw new Error("export names: " + JSON.stringify(names));
const comm = dump.find((e) => e.name === "sched.comm");
if (comm.fields.name !== "\u65e5\ufffd\ufffd")
	throw new Error("comm: " + JSON.stringify(comm.fields.name));
console.log("ok     dump, export, sched --json, report: strict UTF-8;",
	sched.length, "sched lines, names", JSON.stringify(names));
' "$T/utf8.jsonl" "$T/utf8.json" "$T/utf8-sched.jsonl" "$T/utf8.html" ||
	bad "invalid UTF-8 in JSON"

step "terminal escapes in names never reach the terminal"
mkdir -p "$T/esc" && "$B/mktrace" escapes "$T/esc"
for cmd in "info" "sched" "sched --culprits" "sched --explain --min-delay 1" "dump"; do
	# shellcheck disable=SC2086
	"$D9" $cmd "$T/esc" > "$T/esc.out" 2> "$T/esc.err" || bad "$cmd: exit status"
	if LC_ALL=C grep -q "$(printf '[\001-\010\013-\037\177]')" "$T/esc.out" "$T/esc.err" ||
	   LC_ALL=C grep -q "$(printf '\302[\200-\237]')" "$T/esc.out" "$T/esc.err"; then
		bad "$cmd: a control character in its output: $(od -c "$T/esc.out" | head -5)"
	fi
done
"$D9" sched "$T/esc" | grep -q '^w?\]0;pwned??\[2J ' || bad "sched: the name not shown: $("$D9" sched "$T/esc")"
ok "info, sched (--culprits, --explain), dump: control characters as ?"

step "empty traces and extreme clock-sync values: no undefined behaviour"
mkdir -p "$T/empty" "$T/clock"
: > "$T/empty/00000001.dial9"
"$B/mktrace" clock "$T/clock"
for d in empty clock; do
	for cmd in dump "dump --sorted" info sched "export --perfetto" \
		   "report --html"; do
		rc=0
		# shellcheck disable=SC2086
		"$D9" $cmd "$T/$d" > "$T/$d.out" 2> "$T/$d.err" || rc=$?
		if [ "$rc" != 0 ] || grep -q 'runtime error' "$T/$d.err"; then
			bad "$cmd $d: exit $rc: $(head -3 "$T/$d.err")"
		fi
	done
done
ok "empty and extreme traces"

step "dial9 fleet on no summaries: no undefined behaviour"
# nothing to sort (qsort(NULL, 0) is undefined): an empty directory, an
# empty summary/ level, a summary that is an empty file
mkdir -p "$T/fleet0" "$T/fleet1/summary" "$T/fleet2/summary/h/s"
: > "$T/fleet2/summary/h/s/00000001.json.gz"
for d in fleet0 fleet1 fleet2; do
	for opt in "" --json; do
		rc=0
		# shellcheck disable=SC2086
		"$D9" fleet $opt "$T/$d" > "$T/$d.out" 2> "$T/$d.err" || rc=$?
		if [ "$rc" != 0 ] || grep -q 'runtime error' "$T/$d.err"; then
			bad "fleet $opt $d: exit $rc: $(head -3 "$T/$d.err")"
		fi
	done
done
ok "fleet with no summaries: exit 0"

step "dial9 fleet: a FIFO and a gzip bomb among the summaries"
mkdir -p "$T/fleet3/summary/h/s"
mkfifo "$T/fleet3/summary/h/s/00000001.json.gz"
# 64 MiB of newlines: 64 KiB of gzip, past a cap of 16 MiB
head -c 67108864 /dev/zero | tr '\0' '\n' | gzip -9 \
	> "$T/fleet3/summary/h/s/00000002.json.gz"
rc=0
DIAL9_INFLATE_MAX_MB=16 timeout 20 "$D9" fleet "$T/fleet3" \
	> "$T/fleet3.out" 2> "$T/fleet3.err" || rc=$?
[ "$rc" = 0 ] || bad "fleet FIFO and bomb: exit $rc (124: blocked)"
grep -q '00000002.json.gz: decompresses to more than 16 MiB (DIAL9_INFLATE_MAX_MB)$' \
	"$T/fleet3.err" || bad "fleet bomb: said '$(cat "$T/fleet3.err")'"
grep -q '^0 summaries, 0 thread rows' "$T/fleet3.out" ||
	bad "fleet FIFO and bomb: $(head -1 "$T/fleet3.out")"
rm -f "$T/fleet3/summary/h/s/00000002.json.gz"
ok "fleet: FIFO skipped, bomb refused at 16 MiB"

step "dial9 fleet: control characters in names never reach the terminal"
mkdir -p "$T/fleet4/summary/h/s"
sed 's/"host":"h1"/"host":"h\\u001b[31m1"/; s/"thread":"api-main"/"thread":"api\\u0007main"/' \
	tests/fuzz/seeds/fleet/rows.jsonl | gzip > "$T/fleet4/summary/h/s/00000001.json.gz"
"$D9" fleet --since @0 --until @4102444800 --by thread "$T/fleet4" \
	> "$T/fleet4.out" 2> "$T/fleet4.err" || bad "fleet names: exit status"
if LC_ALL=C grep -q "$(printf '[\001-\010\013-\037\177]')" "$T/fleet4.out"; then
	bad "fleet names: a control character in the text output"
fi
grep -q '^h?\[31m1 ' "$T/fleet4.out" && grep -q ' api?main ' "$T/fleet4.out" ||
	bad "fleet names: $(head -5 "$T/fleet4.out")"
ok "fleet: control characters in names shown as ?"

step "dial9 fleet: rows without their key columns, and a bound on rows"
mkdir -p "$T/fleet5/summary/h/s"
{ cat tests/fuzz/seeds/fleet/rows.jsonl; yes '{}' | head -n 200000; } |
	gzip > "$T/fleet5/summary/h/s/00000001.json.gz"
good=$(grep -c '"boot_id"' tests/fuzz/seeds/fleet/rows.jsonl)
rc=0
"$D9" fleet --since @0 --until @4102444800 --by thread "$T/fleet5" \
	> "$T/fleet5.out" 2> "$T/fleet5.err" || rc=$?
[ "$rc" = 0 ] || bad "fleet {} rows: exit $rc: $(head -3 "$T/fleet5.err")"
grep -q "^1 summaries, $good thread rows" "$T/fleet5.out" ||
	bad "fleet {} rows: $(head -1 "$T/fleet5.out")"
grep -q '^dial9 fleet: 200000 lines without a key column' "$T/fleet5.err" ||
	bad "fleet {} rows not said: $(head -3 "$T/fleet5.err")"
rc=0
"$D9" fleet --since @0 --until @4102444800 --max-rows 1 "$T/fleet5" \
	> "$T/fleet6.out" 2> "$T/fleet6.err" || rc=$?
[ "$rc" = 1 ] && grep -q 'more than 1 rows' "$T/fleet6.err" ||
	bad "fleet --max-rows 1: exit $rc: $(head -3 "$T/fleet6.err")"
ok "fleet: keyless rows left out and counted, --max-rows stops loudly"

step "dial9 fleet --per-host: the worst of each host in one run"
mkdir -p "$T/fleet7/summary/h/s"
gzip -c tests/fuzz/seeds/fleet/rows.jsonl > "$T/fleet7/summary/h/s/00000001.json.gz"
"$D9" fleet --since @0 --until @4102444800 --by thread --per-host --top 1 --json "$T/fleet7" |
	node -e 'let s = ""; process.stdin.on("data", (d) => s += d).on("end", () => {
		const g = JSON.parse(s).groups.map((x) => x.host + "/" + x.tid).join(" ");
		if (g !== "h1/101 h2/203") { console.error(g); process.exit(1); } })' ||
	bad "fleet --per-host --top 1: not the worst thread of each host"
ok "fleet --per-host --top 1: h1's 101 and h2's 203"

finish inputs
