#!/bin/sh
# SPDX-License-Identifier: MIT
# run-tests.sh SUITE [OPTION | TEST]... - the one way every dial9 suite
# runs its tests: on the host from the Makefile, and in the test VM
# (busybox sh, tests/vm/init) for the module tests.
#
# Each TEST is one argument, a shell command line run by sh -c under
# timeout(1); "NAME: COMMAND" names it, else its name is the basename of
# its first word.  Options apply to the tests after them:
#   -t SECS    the timeout of each test (default 300; 0: none)
#   -s CODES   the exit codes that mean "skipped" (default "4 77":
#              kselftest's KSFT_SKIP and automake's); -s '' for programs
#              whose exit code counts failures (cmocka) or for which 77
#              is a failure (libFuzzer's crash)
#   -f CMD     run CMD (sh -c) after a test that failed, e.g. to show the
#              state it left
# A test's output (stdout and stderr, merged) goes to this output as it
# comes, between "--- NAME" and one line "ok NAME (S s)", "FAIL NAME
# (S s[, timed out | exit N])" or "SKIP NAME (S s)".  Last, one line
#   SUITE: N passed, N failed, N skipped
# after a recap of every test's verdict and time (under a failed test,
# the last 12 lines of its output that look like a failure, "    | ")
# and the suite's total time, and the exit status: 0 if none failed, else 1 (2: a usage error).
# A test that timed out failed: GNU timeout exits 124, busybox's with the
# signal's status (143), so a status of 124, 137 or 143 after the whole
# timeout has passed is a timeout.
set -u

usage() {
	echo "usage: run-tests.sh SUITE [-t SECS] [-s CODES] [-f CMD] TEST..." >&2
	exit 2
}

# Seconds since boot, to the hundredth (/proc/uptime: host and guest).
now() { cut -d' ' -f1 /proc/uptime; }

[ $# -ge 1 ] || usage
suite=$1
shift
case $suite in
"" | -* | *[!A-Za-z0-9._+-]*) usage ;;
esac

secs=300 skips="4 77" onfail=
passed=0 failed=0 skipped=0 failures= recap=
start=$(now)
tmp=$(mktemp) || exit 2
trap 'rm -f "$tmp" "$tmp.out" "$tmp.fifo"' EXIT
# What a failure says: kselftest's and cmocka's verdicts and assertions,
# a failed test's verdict of a nested suite, a sanitizer's report.
FAILPAT='^not ok|^# +FAIL|Expected|\[ +(FAILED|ERROR) +\]|^ *FAIL |ERROR: |runtime error|fail_msg|still running'

while [ $# -gt 0 ]; do
	case $1 in
	-t | -s | -f)
		[ $# -ge 2 ] || usage
		case $1 in
		-t) secs=$2 ;;
		-s) skips=$2 ;;
		-f) onfail=$2 ;;
		esac
		shift 2
		continue
		;;
	esac
	spec=$1
	shift
	first=${spec%%[ 	]*}
	case $first in
	?*:)
		name=${first%:}
		cmd=${spec#"$first"}
		;;
	*)
		name=${first##*/}
		cmd=$spec
		;;
	esac
	echo "--- $name"
	t0=$(now)
	# The output is kept too: a failed test's failure lines are shown
	# again in the recap, which a log cut to its end still has.  Through
	# a FIFO and not a pipeline, so that a process the test left behind
	# holding its output cannot hold up the run: tee gets 2 s to drain.
	rm -f "$tmp.fifo"
	mkfifo "$tmp.fifo" || exit 2
	tee "$tmp.out" <"$tmp.fifo" &
	teepid=$!
	if [ "$secs" = 0 ]; then
		sh -c "$cmd" >"$tmp.fifo" 2>&1
	else
		timeout -k 10 "$secs" sh -c "$cmd" >"$tmp.fifo" 2>&1
	fi
	rc=$?
	t1=$(now)
	i=0
	while kill -0 "$teepid" 2>/dev/null && [ $i -lt 20 ]; do
		sleep 0.1
		i=$((i + 1))
	done
	kill "$teepid" 2>/dev/null
	wait "$teepid" 2>/dev/null
	el=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')
	verdict=FAIL why=", exit $rc"
	if [ $rc -eq 0 ]; then
		verdict=ok why=
	else
		for c in $skips; do
			[ "$rc" = "$c" ] && verdict=SKIP why=
		done
		case $rc in
		124 | 137 | 143)
			if [ "$secs" != 0 ] && awk -v e="$el" -v s="$secs" \
				'BEGIN { exit !(e >= s) }'; then
				verdict=FAIL why=", timed out after $secs s"
			fi
			;;
		esac
	fi
	echo "$verdict $name ($el s$why)"
	recap="$recap
  $verdict $name ($el s$why)"
	case $verdict in
	ok) passed=$((passed + 1)) ;;
	SKIP) skipped=$((skipped + 1)) ;;
	FAIL)
		failed=$((failed + 1))
		failures="$failures $name"
		why=$(grep -E "$FAILPAT" "$tmp.out" | tail -n 12 | sed 's/^/    | /')
		[ -z "$why" ] || recap="$recap
$why"
		[ -z "$onfail" ] || sh -c "$onfail"
		;;
	esac
done

echo "$suite: each test, then the total time:$recap"
awk -v a="$start" -v b="$(now)" -v s="$suite" \
	'BEGIN { t = b - a; printf "  total %.1f s (%d min %d s)\n", t, t / 60, t % 60 }'
[ -z "$failures" ] || echo "$suite: failed:$failures"
echo "$suite: $passed passed, $failed failed, $skipped skipped"
[ $failed -eq 0 ]
