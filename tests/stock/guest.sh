#!/bin/sh
# In the test VM (busybox sh): stock workloads recorded by
# `dial9 record --children`, each thread's total runqueue wait and wait
# count checked against the kernel's own (sched_info.run_delay and pcount
# at the thread's last switch, read by bpftrace; refprobe.bt).  TAP.
export PATH=/usr/bin:/usr/sbin:/bin:/sbin
ncpus=$(grep -c '^processor' /proc/cpuinfo)
fail=0
n=0
ok() { n=$((n + 1)); echo "ok $n - $*"; }
notok() { n=$((n + 1)); echo "not ok $n - $*"; fail=1; }
# at WHAT: the guest's uptime beside each step, so that a slow or stuck
# step shows in the log.
at() { echo "# at $(cut -d' ' -f1 /proc/uptime) s: $*"; }

# stuck PID: what each thread of PID is doing (state, kernel wait channel
# and stack), for a process that did not exit when it should have.
stuck() {
	for t in /proc/$1/task/*; do
		echo "#   $(cut -d' ' -f2,3 "$t/stat") wchan $(cat "$t/wchan" 2>/dev/null)"
		sed 's/^/#     /' "$t/stack" 2>/dev/null
	done
}

# bounded PID SECS WHAT [note]: wait for the background job PID, at most
# SECS seconds; a job still running then fails the check (or, with
# "note", is only noted: the reference's bpftrace, once its lines are
# read, is not what is tested), with its threads' state.
bounded() {
	i=0
	while kill -0 "$1" 2>/dev/null && [ $i -lt $(($2 * 10)) ]; do
		sleep 0.1
		i=$((i + 1))
	done
	if kill -0 "$1" 2>/dev/null; then
		if [ "$4" = note ]; then
			echo "# $3 still running after $2 s: killed"
		else
			notok "$3 still running after $2 s"
		fi
		stuck "$1"
		kill -9 "$1"
	fi
	wait "$1"
}

# An awk function for both checks below: field(S, K), the number after
# "K": in the JSON text S, or -1.
awk_field='
function field(s, k,   m) {
	if (!match(s, "\"" k "\":[0-9]+"))
		return -1
	m = substr(s, RSTART, RLENGTH)
	sub(/.*:/, "", m)
	return m + 0
}'

# compare LABEL TRACE REF: every thread of the workload in the trace, its
# total and count equal to the kernel's.  A thread's last switch-out
# carries the kernel's figures, so they match exactly when it was
# recorded; the tolerance (100 us + 0.1% of the total, the same count)
# covers a last switch-out lost with its ring's overflow, when the total
# ends at the last switch-in's estimate.  The command's own main thread is
# left out of the check: it ran before dial9 record followed it, and the
# trace counts only what it saw.
compare() {
	label=$1 trace=$2 ref=$3
	dial9 sched --json "$trace" >/tmp/sched.json 2>/tmp/sched.err ||
		{ notok "$label: dial9 sched failed"; sed 's/^/# /' /tmp/sched.err; return; }
	res=$(awk -v jsonfile=/tmp/sched.json "$awk_field"'
	BEGIN {
		getline json < jsonfile
		np = split(json, parts, /\{"tid":/)
		for (i = 2; i <= np; i++) {
			p = parts[i]
			tid = p
			sub(/[^0-9].*/, "", tid)
			tot[tid] = field(p, "runq_total_ns")
			cnt[tid] = field(p, "waits")
			maxd[tid] = field(p, "max_ns")
			pidof[tid] = field(p, "pid")
			mig[tid] = field(p, "migrations")
		}
	}
	$1 == "FINAL" {
		if (!first || $3 < first)
			first = $3
		ref_tgid[$3] = $2; ref_tot[$3] = $4; ref_cnt[$3] = $5
		ref_max[$3] = $6; ref_gap[$3] = $7
	}
	END {
		for (t in ref_tgid) {
			procs[ref_tgid[t]] = 1
			if (t == first)
				continue
			threads++
			if (!(t in tot)) { missing++; continue }
			seen[ref_tgid[t]] = 1
			d = tot[t] - ref_tot[t]
			if (d < 0) d = -d
			if (d > maxdiff) maxdiff = d
			if (d > 100000 + ref_tot[t] / 1000 || cnt[t] != ref_cnt[t]) {
				bad++
				if (bad <= 5)
					printf("# tid %s: dial9 %d ns in %d waits, kernel %d ns in %d\n",
					       t, tot[t], cnt[t], ref_tot[t], ref_cnt[t])
			}
			if (d == 0 && cnt[t] == ref_cnt[t]) exact++
			# the longest wait: the kernel per-wait figure, when
			# the first wait of the thread is in the trace (it is for
			# every thread the workload started) and the probe saw
			# every switch-out of the thread
			m = maxd[t] - ref_max[t]
			if (m < 0) m = -m
			if (ref_gap[t] > 0)
				refgap++
			else if (m > maxmdiff)
				maxmdiff = m
			if (!ref_gap[t] && m > 100000 + ref_max[t] / 1000) {
				badmax++
				if (badmax <= 5)
					printf("# tid %s: longest wait %d ns in dial9, %d in the kernel\n",
					       t, maxd[t], ref_max[t])
				if (badmax == 1)
					printf("DIAG %s\n", t)
			}
			sum_d += tot[t]; sum_k += ref_tot[t]
			if (mig[t] > 0) { migrated++; migs += mig[t] }
			if (maxd[t] > maxmax) maxmax = maxd[t]
		}
		for (p in procs) { nprocs++; if (p in seen || p == first) nseen++ }
		# the main thread of a process whose other threads were checked
		printf("RESULT %d %d %d %d %d %d %.0f %.0f %d %d %d %d %d %d\n",
		       threads + 0, missing + 0, bad + 0, exact + 0, nprocs + 0,
		       nseen + 0, sum_d, sum_k, maxdiff + 0, badmax + 0,
		       maxmdiff + 0, refgap + 0, migrated + 0, migs + 0)
	}' "$ref")
	echo "$res" | grep '^#'
	# The first thread whose longest wait differs: both sides' switches.
	diag=$(echo "$res" | sed -n 's/^DIAG //p')
	if [ -n "$diag" ]; then
		echo "# kernel's switch-outs of tid $diag (ns, cpu, run_delay, pcount):"
		awk -v t="$diag" '$1 == "SW" && $4 == t { print "#   " $2, $3, $5, $6 }' "$ref"
		echo "# dial9's switches of tid $diag:"
		dial9 dump --sorted "$trace" | grep "switch_.*\"tid\":$diag," |
			sed 's/^/#   /'
	fi
	set -- $(echo "$res" | grep '^RESULT')
	if [ "$2" -eq 0 ]; then
		# nothing to compare: what the reference holds, and why
		echo "# $label: the reference holds $(wc -l <"$ref") lines, $(grep -c '^FINAL' "$ref") FINAL, $(grep -c '^SW' "$ref") SW"
		kill -0 "$bt" 2>/dev/null || echo "# bpftrace has exited"
		sed 's/^/# bpftrace: /' /tmp/bt.err
	fi
	echo "# $label: $7 of $6 processes, $2 threads checked ($5 exact); dial9 $(($8 / 1000000)) ms, kernel $(($9 / 1000000)) ms in all; largest difference ${10} ns; longest waits: ${11} off, largest difference ${12} ns (${13} threads not checked: the probe missed a switch); ${14} of the threads checked migrated (${15} migrations)"
	if [ "$2" -gt 0 ] && [ "$3" -eq 0 ] && [ "$4" -eq 0 ] && [ "$6" -eq "$7" ]; then
		ok "$label: every process recorded, every thread's runqueue total and count as the kernel's"
	else
		notok "$label: $3 threads missing, $4 off, $7 of $6 processes"
	fi
	if [ "$2" -gt 0 ] && [ "${11}" -eq 0 ]; then
		ok "$label: every thread's longest wait as the kernel counted it"
	else
		notok "$label: ${11} threads' longest waits off"
	fi
}

# culprits LABEL TRACE: what dial9 sched --culprits and --explain say of
# real records adds up: per thread, the culprits' time is within its
# runnable time (the waits they are laid over), and per delay explained,
# what ran meanwhile is within the wait.
culprits() {
	label=$1 trace=$2
	if ! dial9 sched --culprits --json "$trace" >/tmp/cul.json 2>/tmp/cul.err ||
	   ! dial9 sched --explain --json --min-delay 100 "$trace" >/tmp/exp.json 2>>/tmp/cul.err; then
		notok "$label: dial9 sched --culprits / --explain failed"
		sed 's/^/# /' /tmp/cul.err
		return
	fi
	res=$(awk "$awk_field"'
	# the sum of every "ns": in s
	function nssum(s,   t, m) {
		t = 0
		while (match(s, /"ns":[0-9]+/)) {
			m = substr(s, RSTART + 5, RLENGTH - 5)
			t += m
			s = substr(s, RSTART + RLENGTH)
		}
		return t
	}
	FILENAME == "/tmp/cul.json" {
		n = split($0, parts, /\{"tid":/)
		for (i = 2; i <= n; i++) {
			p = parts[i]
			c = p; sub(/.*"culprits":\[/, "", c); sub(/\].*/, "", c)
			r = field(p, "runnable_ns"); cs = nssum(c)
			q = field(p, "runq_total_ns"); rq += q; rn += r
			nw += field(p, "waits")
			threads++
			if (cs > 0) with++
			if (cs > r + 1000) { bad++; if (bad <= 3) printf("# culprits %d ns > runnable %d ns\n", cs, r) }
			tot += cs
		}
	}
	FILENAME == "/tmp/exp.json" {
		d = $0; sub(/.*"delays":\[/, "", d)
		n = split(d, parts, /\{"tid":/)
		for (i = 2; i <= n; i++) {
			p = parts[i]
			w = field(p, "wait_ns"); c = p; sub(/.*"ran":\[/, "", c); sub(/\].*/, "", c)
			delays++
			if (w < 100000 || nssum(c) > w + 1000) { dbad++; if (dbad <= 3) printf("# delay %d ns, ran %d ns\n", w, nssum(c)) }
		}
	}
	END { printf("RES %d %d %d %d %d %.0f %.0f %.0f %d\n", threads + 0, with + 0, bad + 0, delays + 0, dbad + 0, tot, rq, rn, nw + 0) }
	' /tmp/cul.json /tmp/exp.json)
	echo "$res" | grep '^#'
	set -- $(echo "$res" | grep '^RES')
	echo "# $label: culprits for $3 of $2 threads, $(($7 / 1000000)) ms in all (runqueue total $(($8 / 1000000)) ms over ${10} waits, runnable $(($9 / 1000000)) ms); $5 delays of 100 us or more explained"
	if [ "$2" -gt 0 ] && [ "$3" -gt 0 ] && [ "$4" -eq 0 ] && [ "$5" -gt 0 ] && [ "$6" -eq 0 ]; then
		ok "$label: culprits within each thread's runnable time, what ran within each delay"
	else
		notok "$label: culprits: $4 threads over, $6 delays over (of $2 threads, $5 delays)"
	fi
	# In all, the culprits' time is the kernel's runqueue total: each
	# wait is laid over its CPU between the tracepoints' ends, at most
	# the kernel's measure of it (sched_stats.c).  Within 2%, and 20 us a
	# wait: the kernel's ends are the runqueue clock read as __schedule()
	# begins, so a wait after a preemption or yield counts from before
	# the pick of the next task, while the thread still ran (under TCG
	# on 6.12, 1 to 12 us a wait on average, per thread, for sysbench's
	# yields).
	# Against the runnable windows the trace saw, where they are less:
	# a wait that began before dial9 record followed its thread (the
	# command's main thread, which compare() leaves out) is in the
	# runqueue total but in no window (one CI run on 6.12: stress-ng's
	# total 193 ms over its windows, culprits 6329 of 6342 ms of them).
	#
	# On 6.12 the culprits fall short by more, and not always alike: perf
	# bench messaging's 81 threads, 8 runs, 0.07% to 2.1% under (6.1:
	# 0.1%), with O_DIRECT segments or without; the cause is not found
	# (docs/cli.md says so).  There, within 3%.
	rq=$8; [ "$9" -lt "$rq" ] && rq=$9
	d=$(($7 - rq)); [ $d -lt 0 ] && d=$((-d))
	per=50
	case $(uname -r) in 6.1.*) ;; *) per=33 ;; esac
	if [ "$rq" -gt 0 ] && [ $((d * per)) -le $((rq + ${10} * 20000 * per)) ]; then
		ok "$label: the culprits' time adds up to the kernel's runqueue total (or the trace's runnable windows, if less)"
	else
		notok "$label: culprits $(($7 / 1000000)) ms against a runqueue total of $((rq / 1000000)) ms"
	fi
}

# One bpftrace watches every workload, from the first to the last, and a
# dial9 session of a sleeping process stays open meanwhile: the scheduler
# tracepoints then stay enabled throughout, so dial9 record's sessions
# coming and going never live-patch __schedule() (enabling them again and
# again under load can freeze a TCG guest: ../shared/NOTES-VM.md).
sleep 100000 &
idle=$!
dial9 record -o /tmp/keep -p $idle >/dev/null 2>/tmp/keep.err &
keep=$!
# Its perf buffers: 16 MiB a CPU (4,096 pages, against bpftrace's 64 by
# default), as at 64 pages it lost events under these workloads (375 in a
# hackbench -T run, 1,732 in a sysbench run: the FINAL lines of 21 and 3
# threads).  A run whose reference lost any fails (reference_whole).
BPFTRACE_PERF_RB_PAGES=4096 \
	bpftrace /bin/refprobe.bt hackbench stress-ng sched-messaging sysbench \
	>/tmp/ref-all.txt 2>/tmp/bt.err &
bt=$!
i=0
while ! grep -q Attaching /tmp/ref-all.txt && [ $i -lt 600 ]; do
	sleep 0.1
	i=$((i + 1))
done
if grep -q Attaching /tmp/ref-all.txt; then
	at "bpftrace attached"
else
	notok "bpftrace did not attach in 60 s"
	sed 's/^/# /' /tmp/bt.err
fi

# accounting LABEL: per CPU, dial9 info finds the records in the trace,
# those the recorder left out and the trace's sched.lost adding up to
# what dial9.ko counted in that CPU's ring (sched.ring), losses or not:
# recorded + lost == what the probes tried to write.
accounting() {
	lines=$(grep -c ' dropped by the kernel: ' /tmp/info.txt)
	agree=$(grep -c ' dropped by the kernel: agree$' /tmp/info.txt)
	grep ' dropped by the kernel: ' /tmp/info.txt | sed 's/^/# /'
	if [ "$lines" -ge "$ncpus" ] && [ "$agree" -eq "$lines" ]; then
		ok "$1: per CPU, recorded + lost == what dial9.ko's probes wrote ($agree CPUs)"
	else
		notok "$1: per CPU, $agree of $lines CPUs agree with dial9.ko's counts ($ncpus online)"
	fi
}

# sync_ref LABEL: wait until bpftrace has printed what its probes saw
# until now, rather than for a fixed time: it reads its per-CPU buffers
# some time after the probes fill them, later the more it has to print
# (sysbench's yields: thousands of switch-out lines).  A process named
# d9sync (busybox, under another name) exits, on each CPU, and the
# probe's SYNC line for each is awaited, at most 60 s.
ln -sf /bin/busybox /tmp/d9sync
sync_ref() {
	pids=
	for c in $(seq 0 $((ncpus - 1))); do
		taskset -c "$c" /tmp/d9sync >/dev/null 2>&1 &
		pids="$pids $!"
	done
	for p in $pids; do
		wait "$p"
	done
	i=0
	for p in $pids; do
		while ! grep -q "^SYNC $p\$" /tmp/ref-all.txt && [ $i -lt 600 ]; do
			sleep 0.1
			i=$((i + 1))
		done
		grep -q "^SYNC $p\$" /tmp/ref-all.txt ||
			echo "# $1: bpftrace printed no SYNC line for pid $p in 60 s"
	done
	echo "# $1: the reference caught up in $((i / 10)).$((i % 10)) s"
}

# reference_whole LABEL: bpftrace lost nothing while LABEL ran (it
# prints "Lost N events" when its perf buffer overflowed): a thread whose
# FINAL line was lost would silently not be checked.
reference_whole() {
	lost=$(awk '$1 == "Lost" { n += $2 } END { print n + 0 }' /tmp/ref.txt)
	if [ "$lost" -eq 0 ]; then
		ok "$1: the reference lost nothing ($(grep -c '^FINAL' /tmp/ref.txt) tasks' FINAL lines, $(grep -c '^SW' /tmp/ref.txt) switch-outs)"
	else
		notok "$1: the reference (bpftrace) lost $lost events: some threads' figures are unknown"
	fi
}

# transport LABEL: the recording host wrote dial9.ko's records as the
# kernel wrote them, encoding none (dial9 record's summary says how many
# it encoded), and the readers make of them what the encoding pipeline
# made: the trace rewritten as that pipeline wrote it (kconv: the records
# read through <linux/dial9.h>'s structs, merged by time, encoded by the
# library's encoder, format version 1) gives the same figures, culprits
# and per-CPU accounting, byte for byte.
transport() {
	enc=$(sed -n 's/^dial9 record: [0-9]* scheduler records from dial9.ko (\([0-9]*\) encoded here).*/\1/p' /tmp/rec.err)
	if [ "$enc" = 0 ]; then
		ok "$1: no scheduler record encoded on the recording host"
	else
		notok "$1: '$enc' scheduler records encoded on the recording host"
	fi
	rm -rf /tmp/v1 && mkdir -p /tmp/v1
	for f in /tmp/"$1"/*/*.dial9; do
		kconv "$f" "/tmp/v1/$(basename "$f")" || notok "$1: kconv $f"
	done
	same=0 diff=
	for how in "--json" "--culprits --json" "--explain"; do
		# shellcheck disable=SC2086
		dial9 sched $how "/tmp/$1" >/tmp/raw.out 2>&1
		# shellcheck disable=SC2086
		dial9 sched $how /tmp/v1 >/tmp/v1.out 2>&1
		if cmp -s /tmp/raw.out /tmp/v1.out; then
			same=$((same + 1))
		else
			diff="$diff '$how'"
			diff /tmp/raw.out /tmp/v1.out | head -n 6 | sed 's/^/# /'
		fi
	done
	dial9 info "/tmp/$1" | grep ' dropped by the kernel: ' >/tmp/raw.out
	dial9 info /tmp/v1 | grep ' dropped by the kernel: ' >/tmp/v1.out
	cmp -s /tmp/raw.out /tmp/v1.out && same=$((same + 1)) ||
		diff="$diff info"
	if [ -z "$diff" ]; then
		ok "$1: chunks decoded as the encoding pipeline wrote them ($same outputs alike)"
	else
		notok "$1: chunks and the encoding pipeline differ in$diff"
	fi
}

# run LABEL CMD...: record CMD; its tasks' lines of the reference are
# those bpftrace printed meanwhile.
run() {
	label=$1
	shift
	rm -rf "/tmp/$label"
	from=$(wc -l </tmp/ref-all.txt)
	at "$label"
	dial9 record -o "/tmp/$label" --children -- "$@" >/tmp/cmd.out 2>/tmp/rec.err &
	bounded $! 150 "$label: dial9 record"
	rc=$?
	sync_ref "$label"
	tail -n +$((from + 1)) /tmp/ref-all.txt >/tmp/ref.txt
	sed 's/^/# /' /tmp/rec.err
	if [ $rc -ne 0 ]; then
		notok "$label: dial9 record exited $rc"
		return
	fi
	dial9 info "/tmp/$label" >/tmp/info.txt
	head -n 1 /tmp/info.txt | sed 's/^/# /'
	reference_whole "$label"
	accounting "$label"
	compare "$label" "/tmp/$label" /tmp/ref.txt
	culprits "$label" "/tmp/$label"
	transport "$label"
}

# More runnable tasks than the two CPUs, processes and threads that fork,
# migrate and exit.
run hackbench hackbench -g 2 -l 30
run hackbench-threads hackbench -T -g 2 -l 30
run stress-ng stress-ng --cpu 6 --cpu-ops 60 --quiet
# perf's own messaging benchmark (80 processes, as hackbench) and
# sysbench's threads test (6 threads taking mutexes and yielding).
run perf-messaging perf bench sched messaging -g 2 -l 20
run sysbench sysbench threads --threads=6 --thread-yields=50 \
	--thread-locks=2 --events=1000 --time=0 run
at "stopping bpftrace"
kill -INT $bt
bounded $bt 30 "bpftrace (the reference)" note
# What ran while a recorded thread waited, against perf (culprits.sh).
. /bin/culprits.sh
at "stopping the idle session"
kill $idle
bounded $keep 30 "dial9 record -p of a process that exited"
sed 's/^/# /' /tmp/keep.err
at "done"

echo "1..$n"
exit $fail
