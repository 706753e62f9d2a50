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
# svg_frames SVG: the boxes of a dial9 flame --svg graph as read by
# xmllint (a real XML parser: it fails on a graph that is not
# well-formed), one per line: "X Y WIDTH TITLE".
svg_frames() {
	xmllint --noout "$1" || return 1
	xmllint --xpath "//*[local-name()='g'][@class='frame']" "$1" |
		sed -n 's|.*<title>\(.*\)</title><rect x="\([^"]*\)" y="\([^"]*\)" width="\([^"]*\)".*|\2 \3 \4 \1|p'
}
# svg_top SVG: the title of the box with the most width of its own (its
# width less its callees' above it): the frame on top the most.
svg_top() {
	svg_frames "$1" | awk '
		{ x[NR] = $1; y[NR] = $2; w[NR] = $3; $1 = $2 = $3 = ""
		  t[NR] = substr($0, 4) }
		END {
			for (i = 1; i <= NR; i++) {
				own = w[i]
				for (j = 1; j <= NR; j++)
					if (y[j] == y[i] - 16 && x[j] >= x[i] - 0.01 &&
					    x[j] < x[i] + w[i] - 0.01)
						own -= w[j]
				if (own > best) { best = own; top = t[i] }
			}
			print top
		}'
}
