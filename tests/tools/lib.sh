# shellcheck shell=sh
# SPDX-License-Identifier: MIT
# Sourced by tests/tools/*.sh, each a test of make test-tools (through
# tests/run-tests.sh): DIR, their first argument, holds dial9 (under
# ASan+UBSan) and mktrace.  A script checks on after a failed check and
# fails at its end (finish), so that one run shows every failure.
B=$1
# shellcheck disable=SC2034 # used by the scripts that source this
D9=$B/dial9
fail=0
nbad=0
mark=0
step() { echo "--- $*"; mark=$nbad; }
bad() { echo "FAILED: $*"; fail=1; nbad=$((nbad + 1)); }
# "ok ..." only when the step has had no failure so far
ok() { if [ "$nbad" = "$mark" ]; then echo "ok     $*"; fi; }
# finish NAME: the closing line, and the exit status
finish() {
	[ "$fail" = 0 ] && echo "$1: all passed"
	exit $fail
}
