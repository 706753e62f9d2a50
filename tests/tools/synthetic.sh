#!/bin/sh
# SPDX-License-Identifier: MIT
# synthetic.sh DIR - dial9 export, report, sched and info on traces of
# exactly known content (mktrace), and on corrupt ones (make test-tools).
# DIR holds dial9 (the tool under ASan+UBSan) and mktrace; outputs,
# screenshots included, stay there.
set -eu
. tests/tools/lib.sh

step "dial9 --version: the VERSION file's"
ver=$(cat VERSION)
v=$("$D9" --version) || bad "dial9 --version: exit status"
case $v in
"dial9 $ver" | "dial9 $ver (without S3)") ;;
*) bad "dial9 --version says '$v', VERSION says $ver" ;;
esac

rm -rf "$B/synth" "$B/corrupt"
mkdir -p "$B/synth" "$B/corrupt"

step "synthetic trace: export --perfetto"
"$B/mktrace" synth "$B/synth"
"$D9" export --perfetto "$B/synth" -o "$B/synth.json"
node tests/tools/check_export.js synth "$B/synth.json" || bad "export (synthetic)"

step "synthetic trace: report --html in headless chromium"
"$D9" report --html "$B/synth" -o "$B/report.html"
node tests/tools/report_browser.js "$B/report.html" "$B/report.png" \
	'{"threads":["worker-a","worker-b"],"exactThreads":true,"histRows":8,
	  "histBars":3,"worst":4,"utc":true,
	  "firstWorst":{"name":"worker-b","us":"100.0","utc":"2025-12-01T00:00:00.000300Z"},
	  "culprits":{"worker-a":"worker-b 100% (0.12 ms, 2 waits)",
	              "worker-b":"worker-a 100% (0.13 ms, 2 waits)"},
	  "why":["worker-b 102 waited 100.0 \u00b5s on CPU 0: preempted.",
	         "Ran meanwhile: worker-a 100.0 \u00b5s."]}' ||
	bad "report (synthetic)"

step "scheduler totals and losses: dial9 sched --json, info"
rm -rf "$B/sched"
mkdir -p "$B/sched"
"$B/mktrace" sched "$B/sched"
for c in migrated lost lostin hosts perf; do
	"$D9" sched --json "$B/sched/$c" > "$B/sched/$c.json" ||
		bad "sched --json $c"
done
"$D9" sched --culprits --json "$B/sched/culprits" > "$B/sched/culprits.json" ||
	bad "sched --culprits --json"
"$D9" sched --explain --min-delay 2 --json "$B/sched/culprits" > "$B/sched/explain.json" ||
	bad "sched --explain --json"
"$D9" sched --explain --json "$B/sched/culprits" > "$B/sched/explain-1ms.json" ||
	bad "sched --explain --json (1 ms)"
"$D9" sched --culprits --json "$B/sched/occupants" > "$B/sched/occupants.json" ||
	bad "sched --culprits --json (occupants)"
"$D9" sched --explain --min-delay 1 --json "$B/sched/occupants" \
	> "$B/sched/occupants-explain.json" || bad "sched --explain --json (occupants)"
node tests/tools/check_sched.js "$B/sched" || bad "sched (synthetic)"
"$D9" sched "$B/sched/lostin" > "$B/sched/lostin.txt"
head -1 "$B/sched/lostin.txt" | grep -q '^lost: 6 scheduler records' ||
	bad "sched: losses not at the top"
grep -q '^UNFOLLOWED: 1 processes .*: 777$' "$B/sched/lostin.txt" ||
	bad "sched: unfollowed process not reported"
"$D9" info "$B/sched/lost" > "$B/sched/info.txt"
head -1 "$B/sched/info.txt" | grep -q '^lost: 5 scheduler records' ||
	bad "info: scheduler losses not at the top"
grep -q 'window .* cpu 1: 5 records' "$B/sched/info.txt" ||
	bad "info: no loss window"
"$D9" export --perfetto "$B/sched/lost" -o "$B/sched/lost-export.json"
grep -q '"name":"unknown"' "$B/sched/lost-export.json" ||
	bad "export: no unknown slice across the loss"
"$D9" sched --culprits "$B/sched/culprits" > "$B/sched/culprits.txt"
grep -q '^culprits of 501 (?), during 0.040 ms of its waits:$' "$B/sched/culprits.txt" &&
	grep -A1 '^culprits of 501' "$B/sched/culprits.txt" |
	grep -q '^  ? .* 502/502 .* 0.020 ms  50.0% in 1 waits$' ||
	bad "sched --culprits: text"
"$D9" sched --explain --min-delay 5 "$B/sched/culprits" > "$B/sched/explain.txt"
grep -q '^delays of 0.005 ms or more: 3$' "$B/sched/explain.txt" &&
	grep -q '^  502 (?): 0.005 ms from 1000.000065 s (2025-12-01T00:00:00.000065Z) on CPU 0, woken by ? (601/601)$' "$B/sched/explain.txt" ||
	bad "sched --explain: text"
# --min-delay 0 is every delay, not the 1 ms default; --tid N only N's
"$D9" sched --explain --min-delay 0 "$B/sched/culprits" > "$B/sched/explain0.txt"
grep -q '^delays of 0.000 ms or more: 5$' "$B/sched/explain0.txt" ||
	bad "sched --explain --min-delay 0: $(grep '^delays' "$B/sched/explain0.txt")"
"$D9" sched --explain --min-delay 0 --tid 502 "$B/sched/culprits" > "$B/sched/explain502.txt"
grep -q '^delays of 0.000 ms or more: 2$' "$B/sched/explain502.txt" &&
	! sed -n '/^delays of/,$p' "$B/sched/explain502.txt" | grep -q '^  50[13] ' ||
	bad "sched --explain --tid 502: another thread's delays: $(cat "$B/sched/explain502.txt")"
"$D9" sched --explain --min-delay 0 --tid 502 --json "$B/sched/culprits" |
	node -e 'let s = ""; process.stdin.on("data", (d) => s += d).on("end", () => {
		const d = s.split("\n").filter((l) => l).map((l) => JSON.parse(l))
			.filter((o) => o.delays).flatMap((o) => o.delays);
		if (d.length !== 2 || d.some((x) => x.tid !== 502)) process.exit(1); })' ||
	bad "sched --explain --tid 502 --json: another thread's delays"
# a task the trace does not name: null in dump, not 4294967295
"$D9" dump "$B/sched/culprits" > "$B/sched/dump.jsonl"
grep -q '"prev_tid":null' "$B/sched/dump.jsonl" && ! grep -q 4294967295 "$B/sched/dump.jsonl" ||
	bad "dump: unknown tids as numbers"
# ... and the pid beside it null too (occupants/ has redacted tasks,
# whose tid and pid are both unknown, in switch_in, switch_out and
# cpu_switch, and the idle task: tid 0, pid 0, which stay numbers)
"$D9" dump "$B/sched/occupants" > "$B/sched/dump-occupants.jsonl"
node -e '
const ev = require("fs").readFileSync(process.argv[1], "utf8").trim().split("\n")
	.map((l) => JSON.parse(l));
let nulls = 0, known = 0;
const bad = [];
for (const e of ev) {
	const f = e.fields || {};
	for (const k of Object.keys(f)) {
		if (!/(^|_)tid$/.test(k)) continue;
		const p = k.replace(/tid$/, "pid");
		if (!(p in f)) continue;
		if (f[k] === null) {
			nulls++;
			if (f[p] !== null) bad.push(`${e.name} at ${e.ts}: ${k} null, ${p} ${f[p]}`);
		} else {
			known++;
			if (typeof f[p] !== "number") bad.push(`${e.name} at ${e.ts}: ${k} ${f[k]}, ${p} ${f[p]}`);
		}
	}
}
if (bad.length || nulls < 5 || !known) {
	console.log(`${nulls} unknown tids beside a pid, ${known} known:`);
	console.log(bad.join("\n"));
	process.exit(1);
}
' "$B/sched/dump-occupants.jsonl" && ! grep -q 4294967295 "$B/sched/dump-occupants.jsonl" ||
	bad "dump: the pid beside an unknown tid is not null"
# dial9 --help lists every option of every synopsis in docs/cli.md
"$D9" --help > "$B/help.txt"
for opt in $(grep -E '^(## `dial9 |dial9 [a-z]+ |            \[)' docs/cli.md |
	     grep -oE -- '--[a-z][a-z-]*' | sort -u); do
	grep -qF -- "$opt" "$B/help.txt" || bad "dial9 --help lacks $opt (docs/cli.md has it)"
done
ok "sched --explain --min-delay 0 and --tid; dial9 --help has every option of docs/cli.md"
# Wall clock beside trace time: culprits/ has a clock sync (T0 is
# 2025-12-01T00:00:00Z, mktrace.c), so the UTC of each time is exact.
grep -q '^max delay of 501 (?): 40.0 us at 1000.000050 s (2025-12-01T00:00:00.000050Z)$' "$B/sched/explain.txt" ||
	bad "sched: max delay without its UTC"
"$D9" info "$B/sched/culprits" > "$B/sched/info-utc.txt"
grep -q '^  first    1000000000000 ns  (2025-12-01T00:00:00.000000Z)$' "$B/sched/info-utc.txt" &&
	grep -q '^  last     1000000100000 ns  (2025-12-01T00:00:00.000100Z)$' "$B/sched/info-utc.txt" ||
	bad "info: first and last without their UTC"
"$D9" sched --explain --min-delay 2 "$B/sched/stacks" > "$B/sched/stacks.txt"
"$D9" sched --explain --min-delay 2 --json "$B/sched/stacks" > "$B/sched/stacks.json"
# the longest first: the preemption at 40, then the block at 10
sed -n '/^delays of/,/^(each delay/p' "$B/sched/stacks.txt" | sed '$d' |
	grep -v 'ran meanwhile' > "$B/sched/stacks-delays.txt"
cat > "$B/sched/stacks-want.txt" <<'EOF'
delays of 0.002 ms or more: 3
  700 (?): 0.010 ms from 1000.000040 s on CPU 0, preempted
    stack at its switch-out (1000.000040 s):
      #0  app+0x123
      #1  app+0x400
  700 (?): 0.005 ms from 1000.000020 s on CPU 0, woken by ? (601/601)
    stack at its switch-out (1000.000010 s):
      #0  libc.so.6+0x2100
      #1  app+0x500
      #2  app+0x400
      #3  0xdead
  701 (?): 0.003 ms from 1000.000037 s on CPU 0, new
EOF
diff -u "$B/sched/stacks-want.txt" "$B/sched/stacks-delays.txt" ||
	bad "sched --explain: stacks (text)"
grep -q '"wait_ns":5000,.*"stack":\["libc.so.6+0x2100","app+0x500","app+0x400","0xdead"\]' "$B/sched/stacks.json" &&
	grep -q '"wait_ns":10000,.*"stack":\["app+0x123","app+0x400"\]' "$B/sched/stacks.json" &&
	grep -q '"tid":701,.*"stack":null' "$B/sched/stacks.json" ||
	bad "sched --explain: stacks (JSON)"
# off-CPU time by stack: 700 left at 10 blocked (back at 25: 15 us) and
# at 40 preempted (back at 50: 10 us), outermost frame first
"$D9" flame "$B/sched/stacks" > "$B/sched/flame.txt" 2> "$B/sched/flame.err" ||
	bad "flame: exit status"
# frames without a name fold by their object ([unknown] outside every
# mapping), as perf script and flamegraph.pl show them
printf '%s\n' '? 700;[unknown];[app];[app];[libc.so.6] 15' \
	'? 700;[app];[app] 10' > "$B/sched/flame-want.txt"
diff -u "$B/sched/flame-want.txt" "$B/sched/flame.txt" || bad "flame: folded stacks"
"$D9" flame --tid 700 "$B/sched/stacks" | cmp -s - "$B/sched/flame-want.txt" ||
	bad "flame --tid 700"
# Symbols from the files the mappings name (libelf): mktrace's own two
# functions; a stripped copy and a file that is not ELF keep offsets,
# and say why.  The stacks trace's files are not on this machine.
grep -q '^dial9 flame: 4 frames in /usr/bin/app not named: no such file here$' \
	"$B/sched/flame.err" || bad "flame: no note on a file that is not here"
objcopy --strip-all "$B/mktrace" "$B/sched/mktrace-stripped"
head -c 4096 /dev/urandom > "$B/sched/garbage.elf"
"$B/mktrace" symbols "$B/sched" "$PWD/$B/mktrace" "$B/sched/mktrace-stripped" \
	"$B/sched/garbage.elf"
"$D9" flame "$B/sched/symbols" > "$B/sched/flame-sym.txt" 2> "$B/sched/flame-sym.err" ||
	bad "flame (symbols): exit status"
grep -qx '? 800;mktrace_sym_beta;mktrace_sym_alpha 20' "$B/sched/flame-sym.txt" &&
	grep -qx '? 801;\[mktrace-stripped\];\[mktrace-stripped\] 20' "$B/sched/flame-sym.txt" &&
	grep -qx '? 802;\[garbage.elf\];\[garbage.elf\] 20' "$B/sched/flame-sym.txt" ||
	bad "flame: symbols, $(cat "$B/sched/flame-sym.txt")"
grep -q 'mktrace-stripped not named: stripped, and no debug file (none under /usr/lib/debug/.build-id, no .gnu_debuglink)$' "$B/sched/flame-sym.err" &&
	grep -q 'garbage.elf not named: not an ELF file$' "$B/sched/flame-sym.err" ||
	bad "flame: notes, $(cat "$B/sched/flame-sym.err")"
"$D9" sched --explain --min-delay 1 "$B/sched/symbols" > "$B/sched/explain-sym.txt" 2>/dev/null
a=$(nm "$B/mktrace" | sed -n 's/^0*\([0-9a-f]*\) T mktrace_sym_alpha$/\1/p')
b=$(nm "$B/mktrace" | sed -n 's/^0*\([0-9a-f]*\) T mktrace_sym_beta$/\1/p')
grep -qx '      #0  mktrace_sym_alpha+0x3 (mktrace)' "$B/sched/explain-sym.txt" &&
	grep -qx '      #1  mktrace_sym_beta+0x5 (mktrace)' "$B/sched/explain-sym.txt" &&
	grep -qx "      #0  mktrace-stripped+0x$(printf %x $((0x$a + 3)))" "$B/sched/explain-sym.txt" ||
	bad "sched --explain: symbols ($a, $b): $(grep '#' "$B/sched/explain-sym.txt")"
"$D9" flame --no-symbols "$B/sched/symbols" 2>/dev/null | grep -q '^? 800;mktrace+0x' ||
	bad "flame --no-symbols"
# On-CPU samples, and the filters (mktrace.c's samples/): 900 in
# hot() x3 and cold() x1, 901 in hot() x2; 900's span "request" holds
# the samples at 20 and 30 and 3 of its 6 us off the CPU.
"$B/mktrace" samples "$B/sched"
S=$B/sched/samples
# by address (--no-symbols), so that the filters are told apart; named,
# app's frames fold into one box per object (below)
flame_is() {	# WANT-LINES... -- ARGS: dial9 flame --no-symbols ARGS gives exactly those
	printf '' > "$B/sched/flame-want.txt"
	while [ "$1" != -- ]; do
		printf '%b\n' "$1" >> "$B/sched/flame-want.txt"
		shift
	done
	shift
	"$D9" flame --no-symbols "$@" "$S" > "$B/sched/flame-got.txt" 2>/dev/null ||
		bad "flame $*: exit status"
	cmp -s "$B/sched/flame-want.txt" "$B/sched/flame-got.txt" ||
		bad "flame $*: $(cat "$B/sched/flame-got.txt")"
}
w901='w<&>"'"'"'\0303 901'
# named (the default): what has no name folds by its object, one box
# for main's 4 samples in app, not one per instruction
"$D9" flame --on-cpu "$S" > "$B/sched/flame-fold.txt" 2>/dev/null
printf '%b\n' 'main 900;[app];[app] 4' "$w901;[unknown];[unknown] 2" |
	cmp -s - "$B/sched/flame-fold.txt" ||
	bad "flame --on-cpu: unnamed frames not folded by object: $(cat "$B/sched/flame-fold.txt")"
flame_is 'main 900;app+0x200;app+0x100 3' "$w901;0x400400;0x400100 2" \
	'main 900;app+0x200;app+0x300 1' -- --on-cpu
flame_is "$w901;0x400400;0x400100 2" -- --on-cpu --tid 901
flame_is 'main 900;app+0x200;app+0x100 2' -- --on-cpu --span request
flame_is 'main 900;app+0x200;app+0x300 1' "$w901;0x400400;0x400100 1" -- \
	--on-cpu --from +0.000035 --to +0.000055
flame_is 'main 900;app+0x200;app+0x300 1' "$w901;0x400400;0x400100 1" -- \
	--on-cpu --from 1000.000035 --to 1000.000055
flame_is 'main 900;app+0x200;app+0x500 6' --
flame_is 'main 900;app+0x200;app+0x500 3' -- --span request
flame_is 'main 900;app+0x200;app+0x500 4' -- --from +0.000034
flame_is 'main 900;app+0x200;app+0x500 1' -- --span request --from +0.000034
"$D9" flame --span nosuch "$S" > "$B/sched/flame-got.txt" 2> "$B/sched/flame.err" &&
	[ ! -s "$B/sched/flame-got.txt" ] &&
	grep -q "no span named 'nosuch' in these traces" "$B/sched/flame.err" ||
	bad "flame --span nosuch: $(cat "$B/sched/flame.err")"
for a in "--from x" "--to 1.2.3" "--from +" "--to 1.0000000001"; do
	rc=0
	# shellcheck disable=SC2086
	"$D9" flame $a "$S" > /dev/null 2>&1 || rc=$?
	[ "$rc" = 2 ] || bad "flame $a: exit $rc, not 2"
done
"$D9" flame --on-cpu "$S" 2>&1 >/dev/null |
	grep -q 'INCOMPLETE: the sampling timers fired too late for 1 periods' ||
	bad "flame --on-cpu: the missed period is not said"
rc=0
"$D9" flame --on-cpu "$B/sched/stacks" > /dev/null 2> "$B/sched/flame.err" || rc=$?
[ "$rc" = 1 ] && grep -q 'no CPU samples in these traces' "$B/sched/flame.err" ||
	bad "flame --on-cpu without samples: exit $rc, $(cat "$B/sched/flame.err")"
# The SVG: well-formed (xmllint) though a name holds <&>"' and a cut
# UTF-8 character; hot() (0x100 from main) has the most width of its own.
"$D9" flame --on-cpu --svg -o "$B/sched/flame.svg" "$S" 2>/dev/null ||
	bad "flame --svg: exit status"
top=$(svg_top "$B/sched/flame.svg") || bad "flame --svg: not well-formed XML"
# app's frames are not named here: hot() x3 and cold() x1 fold into [app]
[ "$top" = "[app] (4 samples, 66.67%)" ] || bad "flame --svg: on top: '$top'"
[ "$(svg_frames "$B/sched/flame.svg" | wc -l)" = 7 ] ||
	bad "flame --svg: $(svg_frames "$B/sched/flame.svg" | wc -l) boxes, not 7"
svg_frames "$B/sched/flame.svg" | grep -aq '^796.67 82 393.33 w&lt;&amp;&gt;"'"'"'\(�\|&#xFFFD;\) 901 (2 samples, 33.33%)$' ||
	bad "flame --svg: the escaped name: $(svg_frames "$B/sched/flame.svg" | grep -a 901)"
"$D9" flame --svg "$S" 2>/dev/null > "$B/sched/flame-off.svg"
[ "$(svg_top "$B/sched/flame-off.svg")" = "[app] (0.006 ms, 100.00%)" ] ||
	bad "flame --svg off-CPU: $(svg_top "$B/sched/flame-off.svg")"
rc=0
"$D9" flame "$B/sched/culprits" > /dev/null 2> "$B/sched/flame-none.err" || rc=$?
[ "$rc" = 1 ] && grep -q 'no stacks in these traces' "$B/sched/flame-none.err" ||
	bad "flame without stacks: exit $rc, $(cat "$B/sched/flame-none.err")"
ok "sched and info text, export across a loss, culprits, stacks, flame"

step "corrupt input: message with file and offset, exit 1, no output"
# a stream header, then an event of a type no schema declared
head -c 5 "$B/synth/00000001.dial9" > "$B/corrupt/bad.dial9"
printf '\100\000' >> "$B/corrupt/bad.dial9"
# cut inside the second stream's first frame
head -c 40 "$B/synth/00000002.dial9" > "$B/corrupt/cut.dial9"
for cmd in "export --perfetto" "report --html"; do
	for f in bad cut; do
		rm -f "$B/corrupt/out"
		rc=0
		# shellcheck disable=SC2086
		"$D9" $cmd "$B/corrupt/$f.dial9" -o "$B/corrupt/out" \
			2> "$B/corrupt/err" || rc=$?
		msg=$(cat "$B/corrupt/err")
		case "$f:$msg" in
		"bad:dial9: $B/corrupt/bad.dial9: corrupt trace data at offset 5") ;;
		"cut:dial9: $B/corrupt/cut.dial9: truncated trace data at offset "*) ;;
		*) bad "$cmd $f: said '$msg'" ;;
		esac
		[ "$rc" = 1 ] || bad "$cmd $f: exit $rc, not 1"
		[ ! -e "$B/corrupt/out" ] || bad "$cmd $f: left an output file"
		echo "ok     $cmd $f.dial9: exit $rc: $msg"
	done
done

finish synthetic
