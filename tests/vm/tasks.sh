#!/bin/sh
# SPDX-License-Identifier: MIT
# vm-tasks, in the test VM after a test that failed or timed out (the
# runner's -f, tests/vm/init): every user process left, its threads'
# states, kernel wait channels and stacks (a dial9 hang and a frozen
# guest look alike from outside).
for p in /proc/[0-9]*; do
	[ -s "$p/cmdline" ] || continue	# kernel threads
	for t in "$p"/task/*; do
		echo "DIAL9-VM: task $(cut -d' ' -f1-3 "$t/stat" 2>/dev/null) wchan $(cat "$t/wchan" 2>/dev/null)"
		sed 's/^/DIAL9-VM:     /' "$t/stack" 2>/dev/null
	done
done
