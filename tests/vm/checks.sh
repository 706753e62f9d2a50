#!/bin/sh
# Checks run inside the test VM after the kselftests (busybox sh).
fail=0

# The example reader prints records of its own process.
out=$(timeout 60 dial9-read -n 20)
n=$(echo "$out" | grep -c -E ' (switch|wakeup|waking|comm) ')
echo "$out" | head -n 5
if [ "$n" -ge 5 ]; then
	echo "ok - example reader printed $n records"
else
	echo "not ok - example reader printed $n records"
	fail=1
fi

exit $fail
