#!/bin/sh
# SPDX-License-Identifier: MIT
# run.sh FUZZER SECS DIR - one libFuzzer target for SECS seconds (make
# test-lib and make fuzz, through tests/run-tests.sh): its corpus kept
# in DIR/corpus/NAME, the seeds of tests/fuzz/seeds/NAME read too, its
# log in DIR/NAME.log (the last 40 lines shown on failure), the number of
# executions shown after.  Exit 0 or 1: libFuzzer's own exit code for a
# crash is 77, which the runner would take for a skip.
set -u
f=$1 secs=$2 dir=$3
name=$(basename "$f")
mkdir -p "$dir/corpus/$name"
seeds=
[ -d "tests/fuzz/seeds/$name" ] && seeds=tests/fuzz/seeds/$name
rc=0
# shellcheck disable=SC2086
"$f" -max_total_time="$secs" -timeout=10 -rss_limit_mb=1024 \
	-print_final_stats=1 "$dir/corpus/$name" $seeds \
	2>"$dir/$name.log" || rc=$?
grep -h 'stat::number_of_executed_units' "$dir/$name.log"
if [ "$rc" != 0 ]; then
	tail -40 "$dir/$name.log"
	echo "$name: libFuzzer exited $rc (log: $dir/$name.log)"
	exit 1
fi
