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
	# its worker too, which would wait on its pipe for ever
	kill $(pgrep -P $pp) $pp 2> /dev/null || true
	wait $pp 2> /dev/null || true
	node tests/tools/check_utc.js "$B/rec.jsonl" "$B/rec-info.txt" \
		"$B/rec-explain.txt" "$B/rec-live.txt" ||
		bad "info, sched --explain, sched --live: wall clock"
fi

step "perf backend: a thread's on-CPU time ends at its exit"
# awk burns CPU, reads its own schedstat (the kernel's on-CPU time, ns)
# just before it exits, then sh sleeps on: perf sees no switch-out after
# an exit, and no view may run awk on to the end of the trace: dial9
# sched, the HTML report (its totals and its bars), dial9 export (its
# state slices) and the segment summaries (its row; written back by the
# recorder's worker, which also moves the segment there).
rm -rf "$B/exit" "$B/exit-wb"
if env -u DIAL9_S3_BUCKET DIAL9_WRITE_BACK_DIR="$B/exit-wb" \
	"$D9" record -o "$B/exit" -- sh -c "awk 'BEGIN { for (i = 0; i < 2000000; i++) s += i; getline l < \"/proc/self/schedstat\"; print l > \"$B/exit.ss\" }'; sleep 0.4" \
	> /dev/null 2> "$B/exit.err"; then
	kernel=$(cut -d' ' -f1 "$B/exit.ss")
	"$D9" sched --json "$B/exit-wb" > "$B/exit.json"
	"$D9" report --html "$B/exit-wb" -o "$B/exit.html" 2> /dev/null
	"$D9" export --perfetto "$B/exit-wb" -o "$B/exit-export.json"
	"$D9" dump --sorted "$B/exit-wb" > "$B/exit.jsonl"
	find "$B/exit-wb/summary" -name '*.json.gz' -exec zcat {} + > "$B/exit-summary.jsonl"
	node tests/tools/check_perf.js exit "$kernel" awk "$B/exit.json" \
		"$B/exit.html" "$B/exit-export.json" "$B/exit-summary.jsonl" \
		"$B/exit.jsonl" || bad "an exited thread's on-CPU time"
	ok "an exited thread's on-CPU time is the kernel's and ends at its exit: sched, report, export, summaries"
else
	bad "dial9 record (exit): $(tail -n 2 "$B/exit.err")"
fi

step "perf backend: threads' runqueue totals, counts and migrations are the kernel's"
# Shells that burn and sleep, on CPU 0 beside a hog (also on CPU 0; not
# recorded): where the sched_waking tracepoint cannot be read, perf sees
# no waking by the timer interrupt, so many of their waits have no known
# start.
#  - Three workers (the third under nice -n 5) are stopped (SIGSTOP: no
#    wait can accrue) whenever the kernel's schedstat is read, by this
#    test and by the recorder (at its start and its end), so that both
#    windows hold the same waits: their totals must be equal to the ns,
#    and their migrations (each moved to CPU 1 and back) too.
#  - x runs a while (moving itself to CPU 1 and back), then runs y, born
#    while recorded, which runs a while, reads its own totals and exits
#    (x reaps it at once); then x reads its own and exits, and stays a
#    zombie until the recording ends.  check_perf.js says what holds.
W=$B/runq
rm -rf "$B/sstat" "$W".*
cat > "$W.sh" << 'WORKER'
# sh runq.sh w N | x OUT | y OUT: a worker of recorded.sh
spin() { i=0; while [ $i -lt $1 ]; do i=$((i + 1)); done; }
# stopped until the recorder has read its totals
[ "$1" = y ] || kill -STOP $$
case $1 in
w)
	while :; do spin $2; sleep 0.01; done ;;
x)
	n=0
	while [ $n -lt 30 ]; do
		spin 2000
		sleep 0.01
		n=$((n + 1))
		# moved to CPU 1 and back (by taskset, its child)
		if [ $n = 10 ]; then taskset -pc 1 $$ > /dev/null; fi
		if [ $n = 20 ]; then taskset -pc 0 $$ > /dev/null; fi
	done
	sh "$0" y "$2" ;;
y)
	n=0
	while [ $n -lt 20 ]; do spin 2000; sleep 0.01; n=$((n + 1)); done ;;
esac
# its totals, read last: "TID RUN DELAY COUNT MIGRATIONS" to a file
# already open
exec 3> "$2.$1"
m=$(sed -n 's/^se.nr_migrations *: *//p' /proc/$$/sched 2> /dev/null)
read -r s < /proc/self/schedstat
echo "$$ $s ${m:-NaN}" >&3
WORKER
# await PID STATE: until it is in STATE (T stopped, Z a zombie)
await() {
	for _ in $(seq 200); do
		[ "$(cut -d' ' -f3 "/proc/$1/stat" 2> /dev/null)" = "$2" ] && return 0
		sleep 0.05
	done
	return 1
}
# totals PID: run_delay, pcount and migrations, NaN where not known
# (gone, or no /proc/PID/sched without CONFIG_SCHED_DEBUG)
mig() {
	m=$(sed -n 's/^se.nr_migrations *: *//p' "/proc/$1/sched" 2> /dev/null) || m=
	echo "${m:-NaN}"
}
totals() {
	t=$(cut -d' ' -f2,3 "/proc/$1/schedstat" 2> /dev/null) || t=
	echo "${t:-NaN NaN} $(mig "$1")"
}
taskset -c 0 sh -c 'while :; do :; done' &
hog=$!
taskset -c 0 sh "$W.sh" w 1000 &
w1=$!
taskset -c 0 sh "$W.sh" w 3000 &
w2=$!
taskset -c 0 nice -n 5 sh "$W.sh" w 6000 &
w3=$!
# x's parent execs sleep, which reaps no child
sh -c 'taskset -c 0 sh "$1" x "$2" & echo $! > "$2.pid"; exec sleep 30' \
	holder "$W.sh" "$W" &
holder=$!
for _ in $(seq 200); do
	[ -s "$W.pid" ] && break
	sleep 0.05
done
x=$(cat "$W.pid" 2> /dev/null) || x=
[ -n "$x" ] || x=$holder	# checks of x will fail, the others run
for p in $w1 $w2 $w3 $x; do
	await "$p" T || bad "worker $p not stopped"
	echo "$p $(totals "$p")" >> "$W.start"	# as the recorder reads them
done
"$D9" record -o "$B/sstat" -p $w1 -p $w2 -p $w3 -p "$x" > /dev/null 2> "$B/sstat.err" &
rec=$!
# it has read their totals once it says where its records come from
for _ in $(seq 200); do
	grep -q "scheduler events from" "$B/sstat.err" && break
	sleep 0.05
done
kill -CONT $w1 $w2 $w3 "$x"
sleep 0.5
# moved to CPU 1 and back: migrations the kernel counts, perf does not
taskset -pc 1 $w1 > /dev/null
taskset -pc 1 $w2 > /dev/null
taskset -pc 1 $w3 > /dev/null
sleep 0.5
taskset -pc 0 $w1 > /dev/null
taskset -pc 0 $w2 > /dev/null
taskset -pc 0 $w3 > /dev/null
await "$x" Z || bad "x ($x) did not exit"
xz=$(totals "$x")
kill -STOP $w1 $w2 $w3
for p in $w1 $w2 $w3; do
	await "$p" T || bad "worker $p not stopped"
done
kill -INT $rec
wait $rec || bad "dial9 record -p (sstat): $(tail -n 2 "$B/sstat.err")"
for p in $w1 $w2 $w3; do
	echo "w $p $(sed -n "s/^$p //p" "$W.start") $(totals "$p")"
done > "$W.txt"
{
	echo "x $x $(sed -n "s/^$x //p" "$W.start") $xz $(cut -d' ' -f2- "$W.x" 2> /dev/null)"
	echo "y $(cat "$W.y" 2> /dev/null)"
	echo "nice $w3 125"
} >> "$W.txt"
kill $hog $holder
kill -CONT $w1 $w2 $w3
kill $w1 $w2 $w3
wait $hog $holder $w1 $w2 $w3 2> /dev/null || true
"$D9" sched --json "$B/sstat" > "$B/sstat.json"
"$D9" sched --explain --json --min-delay 1 "$B/sstat" > "$B/sstat-explain.json"
"$D9" dump --sorted "$B/sstat" > "$B/sstat.jsonl"
node tests/tools/check_perf.js runq "$W.txt" "$B/sstat.json" \
	"$B/sstat-explain.json" "$B/sstat.jsonl" ||
	bad "threads' runqueue totals (perf)"
ok "threads' runqueue totals, counts and migrations are the kernel's, an exited thread's as it says, prio under nice"

step "perf backend: the prio of a command run under nice -n 5"
# Two shells (the command and its child) spin on CPU 0, taking turns:
# each runs during the other's waits.  The command's process is followed
# from before nice ran, and its child is born of it.
rm -rf "$B/nice"
"$D9" record -o "$B/nice" -- taskset -c 0 nice -n 5 sh -c \
	'spin() { i=0; while [ $i -lt 50000 ]; do i=$((i + 1)); done; }; spin & spin; wait' \
	> /dev/null 2> "$B/nice.err" || bad "dial9 record (nice): $(tail -n 2 "$B/nice.err")"
"$D9" sched --explain --json --min-delay 1 "$B/nice" > "$B/nice.json"
node tests/tools/check_perf.js prio 125 "$B/nice.json" || bad "the prio of a command under nice (perf)"
ok "dial9 record -- nice -n 5: prio 125"

step "dial9 record: the service is the program run past its launchers"
rm -rf "$B/svc"
"$D9" record -o "$B/svc" -- taskset -c 0 env A=1 nice -n 5 sleep 0.05 \
	> /dev/null 2> "$B/svc.err" || bad "dial9 record (service): $(tail -n 1 "$B/svc.err")"
svc=$("$D9" info "$B/svc" | sed -n 's/^  service = //p' | head -n 1)
[ "$svc" = sleep ] || bad "the service of taskset -c 0 env A=1 nice -n 5 sleep is '$svc'"
ok "taskset -c 0 env A=1 nice -n 5 sleep: service $svc"

finish recorded
