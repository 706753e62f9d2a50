#!/bin/sh
# Inside the benchmark VM (busybox sh, PID 1's child): the cost of
# scheduler tracing per context switch, and where each tracer starts to
# lose records.  Prints one line per run, parsed on the host by
# bench/kmod/sched-table.sh:
#
#   BENCH part=cost|loss wl=WORKLOAD cfg=CONFIG pairs=P rounds=N rep=R
#         ns_per_rt=T events=E lost=L
#
#   sched.sh cost ROUNDS REPS       one vCPU, under -icount
#   sched.sh loss ROUNDS PAIRS...   two vCPUs; ROUNDS round trips per pair
#   sched.sh diag ROUNDS            what each dial9 record type costs
#   sched.sh idle SECS              an idle recorder's CPU and wake-ups
#   sched.sh libdiag ROUNDS REPS    libdial9 recording itself with its flush
#                                   thread at nice 0 (its default) and 10
#   sched.sh steady ROUNDS REPS     libdial9 at steady state: O_DIRECT, the
#                                   page cache, tmpfs, no occupants, no
#                                   CPU profile
#
# Besides the raw /dev/dial9 readers of bench/kmod (dial9-self, -proc,
# -sys), the product paths as shipped: dial9-lib is dial9-libpairs, the
# same workload linking libdial9 and recording itself with the library's
# defaults (DIAL9_ENABLED=1; its "none" is the same binary without it);
# dial9-record is `dial9 record --children -- CMD`.  LOSS_CFGS and
# COST_CFGS (env) pick the loss and cost parts' configurations.
export PATH=/bin:/sbin:/usr/bin:/usr/sbin
mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null
grep -q ' /sys/kernel/tracing ' /proc/mounts ||
	mount -t tracefs tracefs /sys/kernel/tracing
cd /tmp || exit 1
# Traces and the other tracers' output files go to T: an ext4 file
# system on the VM's NVMe disk when it has one (make bench-sched gives
# it one), as on a server; else the initramfs's tmpfs.
T=/var/tmp
mkdir -p "$T"
if [ -b /dev/nvme0n1 ] && mount -t ext4 /dev/nvme0n1 "$T"; then
	echo "BENCH-INFO traces on ext4 (NVMe disk) at $T"
else
	echo "BENCH-INFO traces on tmpfs at $T"
fi
part=$1
rounds=$2
shift 2

# A runqlat-style bpftrace script (written for this benchmark): time from
# wake-up to switch-in per task, as a log2 histogram; counts its events.
cat >/tmp/runqlat.bt <<'BT'
tracepoint:sched:sched_wakeup, tracepoint:sched:sched_wakeup_new
{
	@qtime[args->pid] = nsecs;
	@events = count();
}
tracepoint:sched:sched_switch
{
	@events = count();
	if (args->prev_state == 0) {
		@qtime[args->prev_pid] = nsecs;
	}
	$ns = @qtime[args->next_pid];
	if ($ns) {
		@usecs = hist((nsecs - $ns) / 1000);
	}
	delete(@qtime[args->next_pid]);
}
END
{
	clear(@qtime);
}
BT

num() { sed -n "s/.*$1=\([0-9.]*\).*/\1/p" "$2" | tail -n 1; }

# Workload command for: WL PAIRS
wlcmd() {
	case $1 in
	pingpong) echo "dial9-pingpong -p $2 -n $rounds" ;;
	libpp) echo "dial9-libpairs -p $2 -n $rounds" ;;
	perfbench) echo "perf bench sched pipe -l $rounds" ;;
	esac
}

# The workload's own time per round trip, from its output in /tmp/out.
rt_ns() {
	case $1 in
	pingpong|libpp) num ns_per_rt /tmp/out ;;
	# perf bench prints "N usecs/op"
	perfbench) awk '/usecs\/op/ { printf "%.1f", $1 * 1000 }' /tmp/out ;;
	esac
}

# One run: WL CFG PAIRS REP
run() {
	wl=$1 cfg=$2 pairs=$3 rep=$4
	cmd=$(wlcmd "$wl" "$pairs")
	events=0 lost=0 rec=
	rm -rf /tmp/out /tmp/err $T/perf.data $T/trace.dat* $T/d9.raw \
		$T/d9rec $T/dial9-* $T/wb
	# what an earlier run left to write back is written now, not
	# during this one
	sync
	case $cfg in
	none)
		DIAL9_ENABLED=0 $cmd >/tmp/out 2>/tmp/err ;;
	dial9-lib|dial9-lib-n10|dial9-lib-cached|dial9-lib-tmpfs|dial9-lib-noocc|dial9-lib-nosamples|dial9-fleet)
		# libdial9 as shipped: only the switch that turns it on
		# (-n10: its flush thread at nice 10, as before e1e1c1b;
		# -fleet: fleet mode, every sealed segment compressed (LZ4)
		# and written back with its summary, a seal every second).
		nice=0 fleet= direct=auto
		[ "$cfg" = dial9-lib-n10 ] && nice=10
		# -cached: segments through the page cache, not O_DIRECT;
		# -tmpfs: in the initramfs's tmpfs; -noocc: no occupants;
		# -nosamples: no CPU profile
		extra=
		[ "$cfg" = dial9-lib-cached ] && direct=off
		[ "$cfg" = dial9-lib-tmpfs ] && extra="DIAL9_TRACE_DIR=/tmp/d9"
		[ "$cfg" = dial9-lib-noocc ] && extra="DIAL9_SCHED_OCCUPANTS=0"
		[ "$cfg" = dial9-lib-nosamples ] && extra="DIAL9_CPU_SAMPLE_HZ=0"
		rm -rf /tmp/d9
		rm -rf "$T/wb"
		[ "$cfg" = dial9-fleet ] && mkdir -m 700 "$T/wb" &&
			fleet="DIAL9_WRITE_BACK_DIR=$T/wb DIAL9_ROTATION_SECS=1"
		# shellcheck disable=SC2086
		env DIAL9_ENABLED=1 DIAL9_FLUSH_NICE=$nice DIAL9_DIRECT_IO=$direct \
			$fleet $extra $cmd \
			>/tmp/out 2>/tmp/err
		if ! grep -q 'backend=dial9.ko' /tmp/out; then
			echo "BENCH-ERROR wl=$wl cfg=$cfg pairs=$pairs rep=$rep: not dial9.ko"
			sed 's/^/# /' /tmp/out /tmp/err | tail -n 5
		fi
		events=$(num read /tmp/out); lost=$(num lost /tmp/out)
		# rec_ns, rec_sw: the recorder threads' CPU time and switches
		# while the workload ran (libpairs.c); written: records
		# dial9.ko wrote into the rings (lost counts the kernel's drops
		# and the library's own, when its inbox is full, together)
		rec=" rec_ns=$(num rec_ns /tmp/out) rec_sw=$(num rec_sw /tmp/out) rt_ns=$(num rt_ns /tmp/out) rt_entries=$(num rt_entries /tmp/out) rt_capped=$(num rt_capped /tmp/out)"
		rec="$rec written=$(num written /tmp/out)" ;;
	dial9-record|dial9-record-cached)
		# "dial9 record: N scheduler records from B (E encoded here), L lost; ..."
		# (-cached: segments through the page cache, not O_DIRECT)
		direct=auto
		[ "$cfg" = dial9-record-cached ] && direct=off
		DIAL9_DIRECT_IO=$direct \
		dial9 record -o $T/d9rec --children -- $cmd >/tmp/out 2>/tmp/err
		events=$(sed -n 's/^dial9 record: \([0-9]*\) scheduler records.*/\1/p' /tmp/err)
		lost=$(sed -n 's/^dial9 record: .*, \([0-9]*\) lost.*/\1/p' /tmp/err) ;;
	dial9-self)
		$cmd -s >/tmp/out 2>/tmp/err
		events=$(num read /tmp/out); lost=$(num lost /tmp/out) ;;
	dial9-proc)
		dial9-record -o $T/d9.raw -- $cmd >/tmp/out 2>/tmp/err
		events=$(num read /tmp/err); lost=$(num lost /tmp/err) ;;
	dial9-sys)
		dial9-record -a -o $T/d9.raw -- $cmd >/tmp/out 2>/tmp/err
		events=$(num read /tmp/err); lost=$(num lost /tmp/err) ;;
	perf-sched)
		perf sched record -o $T/perf.data -- $cmd >/tmp/out 2>/tmp/err
		perf report -i $T/perf.data --stats >/tmp/stats 2>&1
		events=$(awk '$1 == "SAMPLE" && $2 == "events:" { print $3; exit }' /tmp/stats)
		# Two kinds of loss.  PERF_RECORD_LOST: records the ring had no
		# room for ("lost N chunks"; perf report -D shows each with its
		# count).  PERF_RECORD_LOST_SAMPLES: samples dropped in the
		# kernel; --stats sums them per event type ("sched:... stats:"
		# sections, "LOST_SAMPLES events: N").  Both are events lost.
		lost=$(awk '/ stats:$/ { inev = 1 }
			inev && $1 == "LOST_SAMPLES" && $2 == "events:" { s += $3 }
			END { print s + 0 }' /tmp/stats)
		nl=$(awk '$1 == "LOST" && $2 == "events:" { print $3; exit }' /tmp/stats)
		[ "${nl:-0}" -gt 0 ] && lost=$((lost + $(perf report -D -i $T/perf.data 2>/dev/null |
			awk '/PERF_RECORD_LOST / { s += $NF } END { print s + 0 }')))
		;;
	trace-cmd)
		trace-cmd record -e sched_switch -e sched_wakeup -e sched_waking \
			-o $T/trace.dat $cmd >/tmp/out 2>/tmp/err
		events=$(trace-cmd report -q -i $T/trace.dat 2>/dev/null |
			grep -c -E 'sched_(switch|wakeup|waking):')
		# record prints "CPU N: M events lost" per CPU (events its reader
		# did not get: ring overruns), on stdout.
		lost=$(awk '$1 == "CPU" && $3 ~ /^[0-9]+$/ && $4 == "events" &&
			$5 == "lost" { s += $3 } END { print s + 0 }' /tmp/out /tmp/err)
		;;
	bpftrace)
		bpftrace -c "$cmd" /tmp/runqlat.bt >/tmp/out 2>/tmp/err
		events=$(sed -n 's/^@events: \([0-9]*\).*/\1/p' /tmp/out); lost=n/a ;;
	# Diagnostics: which part of dial9's cost is what.
	d9-switch|d9-wake|d9-waking|d9-nowakeup)
		case $cfg in
		d9-switch) ev=0x1 ;; d9-wake) ev=0x6 ;; d9-waking) ev=0x2 ;;
		d9-nowakeup) ev=0x7b ;;	# all but DIAL9_EV_WAKEUP
		esac
		$cmd -s -e $ev >/tmp/out 2>/tmp/err
		events=$(num read /tmp/out); lost=$(num lost /tmp/out) ;;
	d9-idle)
		# probes attached, a session that matches no task of the workload
		dial9-record -- sleep 100000 2>/tmp/err &
		sleep 1
		$cmd >/tmp/out
		kill "$(pidof sleep)"; wait ;;
	esac
	ns=$(rt_ns "$wl")
	if [ -z "$ns" ]; then
		echo "BENCH-ERROR wl=$wl cfg=$cfg pairs=$pairs rep=$rep"
		sed 's/^/# /' /tmp/out /tmp/err | tail -n 20
		return
	fi
	echo "BENCH part=$part wl=$wl cfg=$cfg pairs=$pairs rounds=$rounds rep=$rep ns_per_rt=$ns events=${events:-0} lost=${lost:-0}$rec"
}

# Which configurations run, and on which workload.
have() { command -v "$1" >/dev/null 2>&1; }
cfgs="none dial9-self dial9-proc dial9-sys dial9-record perf-sched trace-cmd bpftrace"
have bpftrace || cfgs=${cfgs% bpftrace}
# COST_CFGS (env) picks the cost part's configurations.
cfgs=${COST_CFGS:-$cfgs}
# The workload a configuration runs in the loss part: dial9-lib is the
# ping-pong linking libdial9.
losswl() { case $1 in dial9-lib*|dial9-fleet) echo libpp ;; *) echo pingpong ;; esac; }

# The local timer interrupts of all CPUs so far (/proc/interrupts, LOC).
loc_sum() {
	awk '$1 == "LOC:" { for (i = 2; i <= NF; i++) if ($i ~ /^[0-9]+$/) s += $i }
		END { print s + 0 }' /proc/interrupts
}

# In the background: the local timer interrupts a second over SECS after
# WARM (the window dial9-idle measures), as a BENCH part=idleirq line.
# What a recorder adds to none's is interrupts it causes with no thread
# of its own woken: dial9.ko's sampling timers (DIAL9_CPU_SAMPLE_HZ).
idle_irqs() {
	(
		sleep "$2"
		a=$(loc_sum) t0=$(cut -d' ' -f1 /proc/uptime)
		sleep "$3"
		b=$(loc_sum) t1=$(cut -d' ' -f1 /proc/uptime)
		awk -v c="$1" -v a="$a" -v b="$b" -v t0="$t0" -v t1="$t1" \
			'BEGIN { printf "BENCH part=idleirq cfg=%s secs=%.2f loc_per_s=%.2f\n", c, t1 - t0, (b - a) / (t1 - t0) }'
	) &
}

# An idle recorder over SECS: dial9-idle (bench/idle.c) measures the
# threads of a process from /proc.  IDLE_CFGS (env) picks them.
idle() {
	# warm: past the flush thread's backoff to its idle period (2 s,
	# reached ~3.3 s after its last work).
	secs=$1 warm=5
	idle_irqs none "$warm" "$secs"
	wait
	for cfg in ${IDLE_CFGS:-dial9-lib dial9-record perf-record}; do
		idle_irqs "$cfg" $((warm + 1)) "$secs"
		rm -rf $T/dial9-traces $T/d9rec $T/perf.data
		case $cfg in
		dial9-lib)
			# the library's own threads, in a process doing nothing
			# (asleep throughout: measured from another process, so
			# that taking the samples is not work for the recorder)
			DIAL9_ENABLED=1 dial9-idle -c sleeper -w $((secs + warm + 3)) \
				-t 1 >/dev/null 2>&1 &
			sleep 0.5
			dial9-idle -W vm -c "$cfg" -w "$warm" -t "$secs" $!
			wait ;;
		dial9-record)
			# the recorder's threads (dial9 is $!, sleep its child)
			dial9 record -o $T/d9rec -- sleep $((secs + warm + 3)) 2>/tmp/err &
			sleep 0.5
			dial9-idle -W vm -c "$cfg" -w "$warm" -t "$secs" $!
			wait ;;
		perf-record)
			perf record -e sched:sched_switch -o $T/perf.data -- \
				sleep $((secs + warm + 3)) >/dev/null 2>&1 &
			sleep 0.5
			dial9-idle -W vm -c "$cfg" -w "$warm" -t "$secs" $!
			wait ;;
		esac
	done
}

case $part in
cost)
	reps=$1
	# Warm-up: the first run of each tool pays for page faults on its
	# binary and, for bpftrace, for compiling the script.
	for cfg in $cfgs; do run pingpong "$cfg" 1 0 >/dev/null; done
	run libpp dial9-lib 1 0 >/dev/null
	r=1
	while [ "$r" -le "$reps" ]; do
		for cfg in $cfgs; do run pingpong "$cfg" 1 "$r"; done
		for cfg in none dial9-lib dial9-lib-cached dial9-fleet; do run libpp "$cfg" 1 "$r"; done
		for cfg in $cfgs; do
			[ "$cfg" = dial9-self ] && continue
			run perfbench "$cfg" 1 "$r"
		done
		r=$((r + 1))
	done
	;;
idle)
	idle "$rounds"
	;;
steady)
	# libdial9 at steady state (ROUNDS long: past the recorder's start),
	# where its segments go and what its defaults cost
	r=1
	while [ "$r" -le "$1" ]; do
		for cfg in none dial9-lib dial9-lib-cached dial9-lib-tmpfs \
			dial9-lib-noocc dial9-lib-nosamples; do
			run libpp "$cfg" 1 "$r"
		done
		r=$((r + 1))
	done
	;;
libdiag)
	r=1
	while [ "$r" -le "$1" ]; do
		for cfg in none dial9-lib dial9-lib-n10; do run libpp "$cfg" 1 "$r"; done
		r=$((r + 1))
	done
	;;
diag)
	for r in 1 2; do
		for cfg in none d9-idle d9-switch d9-waking d9-wake d9-nowakeup dial9-self; do
			run pingpong "$cfg" 1 "$r"
		done
	done
	;;
loss)
	# qemu 7.2 hangs bringing up a second vCPU at boot under -icount, so
	# the VM boots with maxcpus=1 and the others come online here.
	for c in /sys/devices/system/cpu/cpu[1-9]*/online; do
		[ -f "$c" ] && echo 1 >"$c"
	done
	echo "BENCH-INFO cpus online: $(cat /sys/devices/system/cpu/online)"
	for p in "$@"; do
		for cfg in ${LOSS_CFGS:-dial9-lib dial9-record perf-sched trace-cmd dial9-self dial9-proc dial9-sys}; do
			run "$(losswl "$cfg")" "$cfg" "$p" 1
		done
	done
	;;
esac
