#!/bin/sh
# SPDX-License-Identifier: MIT
# recorded.sh DIR - dial9 export, report and dump on a real recording
# (mktrace record: the perf backend), make test-tools.  Exit 77 (a skip)
# where perf events are not permitted.  DIR as for synthetic.sh.
set -eu
. tests/tools/lib.sh
rm -rf "$B/rec"
mkdir -p "$B/rec"

step "recorded trace (perf backend): export and report"
rc=0
"$B/mktrace" record "$B/rec" > /dev/null || rc=$?
if [ "$rc" = 77 ]; then
	echo "SKIP: perf events are not permitted here"
	exit 77
elif [ "$rc" != 0 ]; then
	bad "mktrace record: exit $rc"
else
	"$D9" export --perfetto "$B/rec" -o "$B/rec.json"
	node tests/tools/check_export.js record "$B/rec.json" || bad "export (recorded)"
	"$D9" report --html "$B/rec" -o "$B/report-recorded.html"
	node tests/tools/report_browser.js "$B/report-recorded.html" \
		"$B/report-recorded.png" '{"threads":["ping","pong"],"utc":true,"backend":"perf"}' ||
		bad "report (recorded)"
	# Wall clock beside trace time: every line, against this host's
	# clock (the trace was just made), and in step with ts.
	"$D9" dump --sorted "$B/rec" > "$B/rec.jsonl"
	node -e '
const ev = require("fs").readFileSync(process.argv[1], "utf8").trim()
	.split("\n").map((l) => JSON.parse(l));
const bad = ev.filter((e) => !/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/.test(e.utc || ""));
if (!ev.length || bad.length) throw new Error(`${bad.length} of ${ev.length} lines without utc`);
const ms = (e) => Date.parse(e.utc);
const a = ev[0], z = ev[ev.length - 1];
if (Math.abs(ms(z) - Date.now()) > 600e3) throw new Error(`last utc ${z.utc}, now ${new Date().toISOString()}`);
const drift = Math.abs((ms(z) - ms(a)) - (z.ts - a.ts) / 1e6);
if (drift > 1) throw new Error(`utc and ts apart by ${drift} ms over the trace`);
console.log(`dump: ${ev.length} lines with utc, ${a.utc} to ${z.utc}`);
const od = JSON.parse(require("fs").readFileSync(process.argv[2], "utf8")).otherData;
if (od.first_event_ts_ns !== a.ts || od.first_event_utc !== a.utc)
	throw new Error(`export: first event ${od.first_event_ts_ns} ${od.first_event_utc}, dump ${a.ts} ${a.utc}`);
/* the clock sync converts any ts: the first event from it is the dump UTC */
const cs = od.clock_syncs || [];
const fromSync = cs.length === 1 && Date.parse(cs[0].utc) + (a.ts - cs[0].mono_ns) / 1e6;
if (cs.length !== 1 || Math.abs(fromSync - ms(a)) > 1)
	throw new Error(`export: clock_syncs ${JSON.stringify(cs)} do not give the first event UTC ${a.utc}`);
' "$B/rec.jsonl" "$B/rec.json" || bad "dump and export: wall clock"
	# ... and in info, sched --explain and sched --live (perf, -p).
	"$D9" info "$B/rec" > "$B/rec-info.txt"
	"$D9" sched --explain --min-delay 1 "$B/rec" > "$B/rec-explain.txt"
	perf bench sched pipe -l 1000000 > /dev/null 2>&1 &
	pp=$!
	# its worker forked, so that the second it is followed has delays
	# (a cold start of perf, after a long suite, can take longer)
	for _ in $(seq 100); do
		pgrep -P $pp > /dev/null && break
		sleep 0.05
	done
	"$D9" sched --live -p $pp --threshold 5 --duration 2 > "$B/rec-live.txt" \
		2> "$B/rec-live.err" || bad "sched --live: exit status"
	kill $pp 2> /dev/null || true
	wait $pp 2> /dev/null || true
	node tests/tools/check_utc.js "$B/rec.jsonl" "$B/rec-info.txt" \
		"$B/rec-explain.txt" "$B/rec-live.txt" ||
		bad "info, sched --explain, sched --live: wall clock"
fi

step "perf backend: a thread's on-CPU time ends at its exit"
# awk burns CPU, reads its own schedstat (the kernel's on-CPU time, ns)
# just before it exits, then sh sleeps on: dial9 sched must not run awk
# on to the end of the trace (perf sees no switch-out after an exit).
rm -rf "$B/exit"
if "$D9" record -o "$B/exit" -- sh -c "awk 'BEGIN { for (i = 0; i < 2000000; i++) s += i; getline l < \"/proc/self/schedstat\"; print l > \"$B/exit.ss\" }'; sleep 0.4" \
	> /dev/null 2> "$B/exit.err"; then
	kernel=$(cut -d' ' -f1 "$B/exit.ss")
	"$D9" sched --json "$B/exit" > "$B/exit.json"
	node -e '
const t = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"))
	.threads.filter((x) => x.name === "awk");
const k = Number(process.argv[2]);
if (t.length !== 1) throw new Error(`${t.length} awk threads`);
const d = t[0].on_cpu_ns;
console.log(`awk on CPU: dial9 ${(d / 1e6).toFixed(2)} ms, kernel ${(k / 1e6).toFixed(2)} ms`);
/* the kernel read it before its exit, which still runs on CPU */
if (d < k - 1e6 || d > k + 5e6 + 0.1 * k) throw new Error("not the kernel\x27s on-CPU time");
' "$B/exit.json" "$kernel" || bad "an exited thread's on-CPU time"
	ok "an exited thread's on-CPU time is the kernel's"
else
	bad "dial9 record (exit): $(tail -n 2 "$B/exit.err")"
fi

step "perf backend: a thread's runqueue total, count and migrations are the kernel's"
# A shell that burns and sleeps, on CPU 0 beside a hog (also on CPU 0):
# perf sees no waking done by the timer interrupt (the hog is not
# recorded), so many of its waits have no known start.  It is stopped
# (SIGSTOP: no wait can accrue) whenever the kernel's schedstat is read,
# by this test and by the recorder (at its start and its end), so that
# both windows hold the same waits: the totals must be equal to the ns.
taskset -c 0 sh -c 'while :; do :; done' &
hog=$!
taskset -c 0 sh -c 'while :; do i=0; while [ $i -lt 3000 ]; do i=$((i + 1)); done; sleep 0.01; done' &
tgt=$!
kill -STOP $tgt
sleep 0.2
mig() { sed -n 's/^se.nr_migrations *: *//p' /proc/$tgt/sched; }
a="$(cut -d' ' -f2,3 /proc/$tgt/schedstat) $(mig)"
rm -rf "$B/sstat"
"$D9" record -o "$B/sstat" -p $tgt > /dev/null 2> "$B/sstat.err" &
rec=$!
sleep 0.5
kill -CONT $tgt
sleep 0.5
# moved to CPU 1 and back: migrations the kernel counts, perf does not
taskset -pc 1 $tgt > /dev/null
sleep 0.5
taskset -pc 0 $tgt > /dev/null
sleep 0.5
kill -STOP $tgt
sleep 0.3
kill -INT $rec
wait $rec || bad "dial9 record -p (sstat): $(tail -n 2 "$B/sstat.err")"
b="$(cut -d' ' -f2,3 /proc/$tgt/schedstat) $(mig)"
kill $hog
kill -CONT $tgt
kill $tgt
wait $hog $tgt 2> /dev/null || true
"$D9" sched --json "$B/sstat" > "$B/sstat.json"
node -e '
const [d0, c0, m0, d1, c1, m1] = process.argv.slice(1, 7).map(Number);
const t = JSON.parse(require("fs").readFileSync(process.argv[7], "utf8"))
	.threads.filter((x) => x.tid === Number(process.argv[8]));
if (t.length !== 1) throw new Error(`${t.length} threads of the target`);
const x = t[0];
console.log(`runqueue: dial9 ${x.runq_total_ns} ns in ${x.waits} runs (${x.unknown_delays} waits of unknown length), ${x.migrations} migrations; kernel ${d1 - d0} ns in ${c1 - c0}, ${m1 - m0} migrations`);
if (x.runq_total_ns !== d1 - d0 || x.waits !== c1 - c0)
	throw new Error("not the kernel\x27s runqueue total and count");
/* where the kernel shows them (CONFIG_SCHED_DEBUG): its migrations */
if (!Number.isNaN(m0) && x.migrations !== m1 - m0)
	throw new Error("not the kernel\x27s migrations");
' $a $b "$B/sstat.json" $tgt || bad "a thread's runqueue total (perf)"
ok "a thread's runqueue total and count are the kernel's, with waits of unknown length"

step "dial9 record: the service is the program run past its launchers"
rm -rf "$B/svc"
"$D9" record -o "$B/svc" -- taskset -c 0 env A=1 nice -n 5 sleep 0.05 \
	> /dev/null 2> "$B/svc.err" || bad "dial9 record (service): $(tail -n 1 "$B/svc.err")"
svc=$("$D9" info "$B/svc" | sed -n 's/^  service = //p' | head -n 1)
[ "$svc" = sleep ] || bad "the service of taskset -c 0 env A=1 nice -n 5 sleep is '$svc'"
ok "taskset -c 0 env A=1 nice -n 5 sleep: service $svc"

finish recorded
