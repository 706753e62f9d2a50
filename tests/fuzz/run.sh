#!/bin/sh
# SPDX-License-Identifier: MIT
# run.sh SECS DIR FUZZER... - libFuzzer targets for SECS seconds each
# (make test-lib and make fuzz, through tests/run-tests.sh), as many at
# once as there are CPUs (DIAL9_FUZZ_JOBS overrides): each one's corpus
# kept in DIR/corpus/NAME, the seeds of tests/fuzz/seeds/NAME read too,
# its log in DIR/NAME.log (the last 40 lines shown on failure), the
# number of executions shown after.  Exit 0 if every target ran clean,
# else 1: libFuzzer's own exit code for a crash is 77, which the runner
# would take for a skip.
set -u
secs=$1 dir=$2
shift 2
jobs=${DIAL9_FUZZ_JOBS:-$(nproc 2>/dev/null || echo 1)}
case $jobs in '' | *[!0-9]* | 0) jobs=1 ;; esac

# one FUZZER: its verdict in DIR/NAME.rc
one() {
	f=$1 name=$(basename "$1")
	mkdir -p "$dir/corpus/$name"
	seeds=
	[ -d "tests/fuzz/seeds/$name" ] && seeds=tests/fuzz/seeds/$name
	rc=0
	# shellcheck disable=SC2086
	"$f" -max_total_time="$secs" -timeout=10 -rss_limit_mb=1024 \
		-print_final_stats=1 "$dir/corpus/$name" $seeds \
		2>"$dir/$name.log" || rc=$?
	echo "$rc" >"$dir/$name.rc"
}

fail=0 running=0 names=
for f in "$@"; do
	one "$f" &
	names="$names $(basename "$f")"
	running=$((running + 1))
	if [ "$running" -ge "$jobs" ]; then
		wait
		running=0
	fi
done
wait
for name in $names; do
	echo "$name: $(grep -h 'stat::number_of_executed_units' "$dir/$name.log")"
	rc=$(cat "$dir/$name.rc" 2>/dev/null || echo missing)
	if [ "$rc" != 0 ]; then
		tail -40 "$dir/$name.log"
		echo "$name: libFuzzer exited $rc (log: $dir/$name.log)"
		fail=1
	fi
done
exit $fail
