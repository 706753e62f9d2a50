#!/bin/sh
# Checks run inside the test VM after the kselftests (busybox sh), in TAP.
fail=0
n=0
ok() { n=$((n + 1)); echo "ok $n - $*"; }
notok() { n=$((n + 1)); echo "not ok $n - $*"; fail=1; }

# The example reader prints records of its own process.
out=$(timeout 60 dial9-read -n 20)
c=$(echo "$out" | grep -c -E ' (switch|wakeup|waking|comm) ')
echo "$out" | head -n 5 | sed 's/^/# /'
if [ "$c" -ge 5 ]; then ok "example reader printed $c records"; else notok "example reader printed $c records"; fi

# A session's rings are vmalloc'ed by dial9_ring_alloc, and freed on close.
rings() { grep -c 'dial9_ring_alloc' /proc/vmallocinfo; }
dial9-read >/dev/null &
pid=$!
sleep 1
open_rings=$(rings)
kill $pid
wait $pid 2>/dev/null
closed_rings=$(rings)
if [ "$open_rings" -gt 0 ] && [ "$closed_rings" -eq 0 ]; then
	ok "rings freed on close ($open_rings vmalloc areas while open, 0 after)"
else
	notok "rings: $open_rings areas while open, $closed_rings after close"
fi

# 20 load/unload cycles, each with a session recording in between.
cycles=0
for i in $(seq 1 20); do
	rmmod dial9 || break
	insmod /dial9.ko || break
	chmod 0666 /dev/dial9
	timeout 60 dial9-read -n 5 >/dev/null || break
	[ "$(rings)" -eq 0 ] || break
	cycles=$i
done
if [ "$cycles" -eq 20 ]; then ok "20 load/unload cycles with a session each"; else notok "load/unload stopped after $cycles cycles"; fi

# dial9 record on an unmodified program (and its children): ordinary
# segments with its scheduling, read back by dial9 info and dial9 sched.
if [ -x /bin/dial9 ]; then
	rm -rf /tmp/rec
	dial9 record -o /tmp/rec --children -- sh -c \
		'for i in 1 2 3 4 5 6 7 8; do sleep 0.01; done; exit 3' 2>/tmp/rec.err
	rc=$?
	sed 's/^/# /' /tmp/rec.err
	info=$(dial9 info /tmp/rec)
	json=$(dial9 sched --json /tmp/rec)
	echo "$json" | cut -c1-200 | sed 's/^/# /'
	if [ "$rc" -eq 3 ] && echo "$info" | grep -q 'sched_backend = dial9.ko' &&
	   echo "$info" | grep -q 'sched.switch_in' &&
	   echo "$json" | grep -q '"name":"sleep"' &&
	   echo "$json" | grep -q '"name":"sh"'; then
		ok "dial9 record -- sh: the command's and its children's scheduling, exit status kept"
	else
		notok "dial9 record -- sh (rc=$rc)"
		echo "$info" | sed 's/^/# /'
	fi
fi

# dial9 sched --live: delays as they happen (system-wide, as root), then
# the report; stopped by SIGINT as a user's Ctrl-C would.
if [ -x /bin/dial9 ]; then
	dial9 sched --live --threshold 0 >/tmp/live.out 2>/tmp/live.err &
	lp=$!
	sh -c 'i=0; while [ $i -lt 3000 ]; do i=$((i+1)); done' &
	sleep 1
	kill -INT $lp
	wait $lp
	lrc=$?
	delays=$(grep -c ' us$' /tmp/live.out)
	# each with its wall clock beside time_s
	noutc=$(grep ' us$' /tmp/live.out | grep -cvE \
		'^ *-?[0-9]+\.[0-9]{6} [0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{6}Z ')
	head -n 3 /tmp/live.out | sed 's/^/# /'
	if [ "$lrc" -eq 0 ] && [ "$delays" -gt 0 ] && [ "$noutc" -eq 0 ] &&
	   grep -q 'runqueue delay (us)' /tmp/live.out &&
	   grep -q '^thread ' /tmp/live.out; then
		ok "dial9 sched --live: $delays delays printed, each with its UTC, report on SIGINT"
	else
		notok "dial9 sched --live (rc=$lrc, $delays delays, $noutc without UTC)"
		sed 's/^/# /' /tmp/live.err
	fi
fi

# CPU hotplug: rings exist for every possible CPU; sessions work while a
# CPU is offline, and across it coming back.
if [ -w /sys/devices/system/cpu/cpu1/online ]; then
	echo 0 >/sys/devices/system/cpu/cpu1/online
	a=$(timeout 60 dial9-read -n 10 | grep -c ' cpu=0 ')
	echo 1 >/sys/devices/system/cpu/cpu1/online
	b=$(timeout 60 dial9-read -n 10 | grep -c ' cpu=')
	if [ "$a" -eq 10 ] && [ "$b" -eq 10 ]; then ok "cpu1 offline and back: sessions record"; else notok "hotplug: $a records with cpu1 offline, $b after"; fi
fi

echo "1..$n"
exit $fail
