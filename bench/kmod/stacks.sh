#!/bin/sh
# The cost of DIAL9_SCHED_STACKS (make bench-stacks, in the VM under
# -icount, one vCPU): dial9-libpairs's time per round trip without the
# recorder, with it, and with it and stacks, built as usual and with
# -fno-omit-frame-pointer (dial9-libpairs-fp); REPS interleaved runs of
# ROUNDS round trips.  Prints STACKBENCH lines (docs/benchmarks.md).
#   sh stacks.sh ROUNDS REPS
n=${1:-20000}
reps=${2:-3}
for r in $(seq "$reps"); do
	for cfg in none off on fp-off fp-on; do
		rm -rf /tmp/dial9-traces
		bin=dial9-libpairs
		case $cfg in fp-*) bin=dial9-libpairs-fp ;; esac
		case $cfg in
		none) DIAL9_ENABLED=0 $bin -p 1 -n "$n" >/tmp/out 2>/tmp/err ;;
		*off) DIAL9_ENABLED=1 $bin -p 1 -n "$n" >/tmp/out 2>/tmp/err ;;
		*on) DIAL9_ENABLED=1 DIAL9_SCHED_STACKS=1 $bin -p 1 -n "$n" \
			>/tmp/out 2>/tmp/err ;;
		esac
		echo "STACKBENCH cfg=$cfg rep=$r $(cat /tmp/out)"
		[ -s /tmp/err ] && sed 's/^/# /' /tmp/err | tail -n 3
		# what the stacks look like: the first one --explain shows
		if [ "$r" = 1 ] && [ "$cfg" = fp-on ]; then
			dial9 sched --explain --min-delay 1 /tmp/dial9-traces |
				grep -m1 -A4 'stack at' | sed 's/^/STACKBENCH-EX /'
		fi
	done
done
