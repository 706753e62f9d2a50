#!/bin/sh
# The cost of DIAL9_SCHED_STACKS (make bench-stacks, in the VM under
# -icount, one vCPU): dial9-libpairs's time per round trip without the
# recorder, with it, and with it and stacks, built as usual and with
# -fno-omit-frame-pointer (dial9-libpairs-fp); REPS interleaved runs of
# ROUNDS round trips.  Prints STACKBENCH lines (docs/benchmarks.md).
# Beside them, the field's off-CPU stack recorders on the frame-pointer
# build with no dial9 recorder: perf-g, `perf sched record -g` (every
# sched_switch with its kernel and user callchain, to perf.data), and
# bpf-offcpu, an offcputime-style bpftrace script (written for this
# benchmark): off-CPU time summed by user stack in kernel maps, the
# stack taken as the thread is switched back in.
#   sh stacks.sh ROUNDS REPS
n=${1:-20000}
reps=${2:-3}
export PATH=/bin:/sbin:/usr/bin:/usr/sbin
have() { command -v "$1" >/dev/null 2>&1; }
grep -q ' /sys/kernel/tracing ' /proc/mounts 2>/dev/null ||
	mount -t tracefs tracefs /sys/kernel/tracing 2>/dev/null
cat >/tmp/offcpu.bt <<'BT'
tracepoint:sched:sched_switch /pid == cpid/
{
	@start[tid] = nsecs;
}
kprobe:finish_task_switch* /pid == cpid && @start[tid]/
{
	@off[ustack, comm] = sum(nsecs - @start[tid]);
	delete(@start[tid]);
	@stacks = count();
}
END
{
	clear(@start);
	clear(@off);
}
BT
cfgs="none off on fp-none fp-off fp-on"
have perf && cfgs="$cfgs perf-g"
have bpftrace && cfgs="$cfgs bpf-offcpu"
for r in $(seq "$reps"); do
	for cfg in $cfgs; do
		rm -rf /tmp/dial9-traces
		bin=dial9-libpairs
		case $cfg in fp-*|perf-g|bpf-*) bin=dial9-libpairs-fp ;; esac
		case $cfg in
		*none) DIAL9_ENABLED=0 $bin -p 1 -n "$n" >/tmp/out 2>/tmp/err ;;
		perf-g) DIAL9_ENABLED=0 perf sched record -g -o /tmp/perf.data \
			-- $bin -p 1 -n "$n" >/tmp/out 2>/tmp/err ;;
		bpf-offcpu) DIAL9_ENABLED=0 bpftrace -c "$bin -p 1 -n $n" \
			/tmp/offcpu.bt >/tmp/bt 2>/tmp/err
			grep '^pingpong' /tmp/bt >/tmp/out
			echo "# bpftrace: $(grep '^@stacks' /tmp/bt)" >>/tmp/err ;;
		*off) DIAL9_ENABLED=1 $bin -p 1 -n "$n" >/tmp/out 2>/tmp/err ;;
		*on) DIAL9_ENABLED=1 DIAL9_SCHED_STACKS=1 $bin -p 1 -n "$n" \
			>/tmp/out 2>/tmp/err ;;
		esac
		echo "STACKBENCH cfg=$cfg rep=$r $(cat /tmp/out)"
		if [ "$cfg" = perf-g ]; then
			perf report -i /tmp/perf.data --stats 2>/dev/null |
				awk '$1 == "SAMPLE" && $2 == "events:" { print "# perf samples: " $3; exit }'
			rm -f /tmp/perf.data	# ~100 MB of the guest's RAM
		fi
		[ -s /tmp/err ] && sed 's/^/# /' /tmp/err | tail -n 3
		# what the stacks look like: the first one --explain shows
		if [ "$r" = 1 ] && [ "$cfg" = fp-on ]; then
			dial9 sched --explain --min-delay 1 /tmp/dial9-traces |
				grep -m1 -A4 'stack at' | sed 's/^/STACKBENCH-EX /'
		fi
	done
done
