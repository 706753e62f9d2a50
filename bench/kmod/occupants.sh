#!/bin/sh
# The cost of DIAL9_CFG_OCCUPANTS (make bench-occupants, in the VM under
# -icount, one vCPU): REPS interleaved runs of ROUNDS round trips of
#   lib-*      dial9-libpairs recording itself (DIAL9_ENABLED=1), with
#              DIAL9_SCHED_OCCUPANTS=0 (off) and 1 (on), and without the
#              recorder (none): the recorded tasks' own cost;
#   foreign-*  dial9-pingpong, not recorded, while `dial9 record -p` of a
#              sleeping process runs with occupants off and on (and no
#              recorder: none): what every other task of the host pays
#              (the wake-up and migrate tracepoints a session with
#              occupants attaches, and the count kept at each switch);
#   busy-*     dial9-libpairs recording itself beside a foreign busy
#              loop (nice 10, so the pair mostly runs): its threads wait
#              behind it, and each switch of that loop is recorded.
# Prints OCCBENCH lines (docs/benchmarks.md).
#   sh occupants.sh ROUNDS REPS
export PATH=/bin:/sbin:/usr/bin:/usr/sbin
n=${1:-20000}
reps=${2:-3}
cd /tmp || exit 1
num() { sed -n "s/.*$1=\([0-9.]*\).*/\1/p" "$2" | tail -n 1; }
# A session that stays enabled throughout keeps the scheduler tracepoints
# patched in (../shared/NOTES-VM.md: patching them again and again can
# freeze TCG); without occupants, so that a run with them attaches the
# wake-up and migrate tracepoints and their cost is measured.
sleep 100000 &
keep=$!
DIAL9_SCHED_OCCUPANTS=0 dial9 record -o /tmp/keep -p $keep >/dev/null 2>&1 &
sleep 1
for r in $(seq "$reps"); do
	for cfg in lib-none lib-off lib-on foreign-none foreign-off foreign-on \
		busy-off busy-on; do
		rm -rf /tmp/dial9-traces /tmp/rec
		occ=0
		case $cfg in *-on) occ=1 ;; esac
		case $cfg in
		lib-none)
			DIAL9_ENABLED=0 dial9-libpairs -p 1 -n "$n" >/tmp/out 2>/tmp/err ;;
		lib-*)
			DIAL9_ENABLED=1 DIAL9_SCHED_OCCUPANTS=$occ \
				dial9-libpairs -p 1 -n "$n" >/tmp/out 2>/tmp/err ;;
		foreign-none)
			dial9-pingpong -p 1 -n "$n" >/tmp/out 2>/tmp/err ;;
		foreign-*)
			sleep 100000 &
			s=$!
			DIAL9_SCHED_OCCUPANTS=$occ dial9 record -o /tmp/rec -p $s \
				>/dev/null 2>/tmp/rec.err &
			sleep 1
			dial9-pingpong -p 1 -n "$n" >/tmp/out 2>/tmp/err
			kill $s
			wait $s 2>/dev/null ;;
		busy-*)
			nice -n 10 sh -c 'while :; do :; done' &
			b=$!
			DIAL9_ENABLED=1 DIAL9_SCHED_OCCUPANTS=$occ \
				dial9-libpairs -p 1 -n "$n" >/tmp/out 2>/tmp/err
			kill $b
			wait $b 2>/dev/null ;;
		esac
		echo "OCCBENCH cfg=$cfg rep=$r ns_per_rt=$(num ns_per_rt /tmp/out) read=$(num read /tmp/out) lost=$(num lost /tmp/out) written=$(num written /tmp/out)"
		[ -s /tmp/err ] && sed 's/^/# /' /tmp/err | tail -n 3
	done
done
kill $keep
wait
