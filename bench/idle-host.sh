#!/bin/sh
# The idle recorder on the host: CPU time and wake-ups per second of the
# threads of each recorder with nothing to record, measured from /proc by
# dial9-idle (bench/idle.c).  Prints dial9-idle's BENCH lines (one per
# configuration, BENCH-TASK per thread); bench/kmod/sched-table.sh makes
# the table.
#
#   idle-host.sh BENCH_DIR SECS
#
#   dial9-lib         a process linking libdial9, DIAL9_ENABLED=1, asleep
#                     throughout: the library's threads (no dial9.ko on the
#                     host: the perf-event backend), measured from another
#                     process, as in the VM (bench/kmod/sched.sh idle): a
#                     process measuring itself wakes to take each sample,
#                     and its switches are then work for its recorder
#   dial9-lib-self    the same measured from inside (the method before
#                     2026-12-01's second change: compare with old figures)
#   dial9-lib-nosched the same with DIAL9_SCHED_ENABLED=0 (application
#                     events only)
#   perf-record       perf record -e sched:sched_switch -- sleep: perf's
#                     threads
#   lttng-app         lttng_bench idle (an LTTng-UST application, its event
#                     enabled in an active session): the application's threads
#   lttng-consumerd   that session's consumer daemon(s)
#   lttng-sessiond    the session daemon (it started the consumer)
set -u
dir=$1 secs=$2 warm=2
idle=$dir/dial9-idle
tmp=$dir/idle-tmp
rm -rf "$tmp" && mkdir -p "$tmp" || exit 1
left=$((secs + warm + 3))

# warm: past the flush thread's backoff to its idle period (2 s, reached
# ~3.3 s after its last work), as in the VM
DIAL9_ENABLED=1 DIAL9_TRACE_DIR=$tmp/traces \
	"$idle" -c sleeper -w $((secs + 5 + 3)) -t 1 >/dev/null 2>&1 &
pid=$!
sleep 0.5
"$idle" -W host -c dial9-lib -w 5 -t "$secs" $pid
wait
DIAL9_ENABLED=1 DIAL9_TRACE_DIR=$tmp/traces \
	"$idle" -W host -c dial9-lib-self -w $warm -t "$secs"
DIAL9_ENABLED=1 DIAL9_SCHED_ENABLED=0 DIAL9_TRACE_DIR=$tmp/traces \
	"$idle" -W host -c dial9-lib-nosched -w $warm -t "$secs"

if command -v perf >/dev/null; then
	perf record -e sched:sched_switch -o "$tmp/perf.data" -- sleep $left \
		>/dev/null 2>&1 &
	pid=$!
	sleep 0.5
	"$idle" -W host -c perf-record -w $warm -t "$secs" $pid
	wait
else
	echo "BENCH-INFO perf-record skipped: no perf"
fi

# LTTng-UST: a session daemon of our own (not if one runs already), one
# user-space channel with the benchmark's event, the application idle.
why=
if [ ! -x "$dir/lttng_bench" ]; then
	why="lttng_bench not built (liblttng-ust-dev missing)"
elif ! command -v lttng-sessiond >/dev/null || ! command -v lttng >/dev/null; then
	why="lttng-tools not installed"
elif pgrep -x lttng-sessiond >/dev/null; then
	why="a session daemon not ours runs"
fi
if [ -n "$why" ]; then
	echo "BENCH-INFO lttng skipped: $why"
	exit 0
fi
export LTTNG_HOME=$tmp/lttng-home
mkdir -p "$LTTNG_HOME"
lttng-sessiond --daemonize --no-kernel >/dev/null 2>&1 || {
	echo "BENCH-INFO lttng skipped: lttng-sessiond failed"
	exit 0
}
sessiond=$(pgrep -x lttng-sessiond | head -n 1)
s=d9idle
{
	lttng create $s --output="$tmp/lttng-trace" &&
	lttng enable-channel -u -s $s ch &&
	lttng enable-event -u -s $s -c ch dial9_bench:event &&
	lttng start $s
} >"$tmp/lttng.log" 2>&1 || {
	echo "BENCH-INFO lttng skipped: session setup failed: $(tail -n 1 "$tmp/lttng.log")"
	kill "$sessiond"
	exit 0
}
"$dir/lttng_bench" idle $left &
app=$!
sleep 0.5
# The three measured at once, over the same window.
"$idle" -W host -c lttng-app -w $warm -t "$secs" $app >"$tmp/app.out" &
"$idle" -W host -c lttng-consumerd -w $warm -t "$secs" \
	$(pgrep -x lttng-consumerd) >"$tmp/consumerd.out" &
"$idle" -W host -c lttng-sessiond -w $warm -t "$secs" $sessiond \
	>"$tmp/sessiond.out" &
wait
cat "$tmp/app.out" "$tmp/consumerd.out" "$tmp/sessiond.out"
lttng destroy $s >/dev/null 2>&1
kill "$sessiond"
for i in 1 2 3 4 5 6 7 8 9 10; do
	kill -0 "$sessiond" 2>/dev/null || break
	sleep 0.5
done
kill -9 "$sessiond" 2>/dev/null
exit 0
