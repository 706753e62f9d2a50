#!/bin/bash
# SPDX-License-Identifier: MIT
#
# tests/fleet/settings.sh DIAL9 OUT - dial9 record under the recorder's
# DIAL9_* settings (docs/cli.md, "The recorder's settings"), each
# asserted by what lands on disk and what dial9 record reports:
#
#  - disk budget (DIAL9_MAX_DISK_USAGE_MB=1): the directory stays within
#    it, the oldest segments go, and the evictions are reported;
#  - trigger mode (DIAL9_MODE=trigger, DIAL9_TRIGGER_SIGNAL=USR2, to a
#    write-back directory): nothing is shipped before `kill -USR2`, the
#    dump ships every segment sealed so far, later ones stay on disk;
#  - memory mode (DIAL9_STORAGE=memory): nothing under the trace
#    directory, every segment shipped; with trigger mode and
#    DIAL9_MEMORY_BUDGET_MB=1, the dump holds at most the budget and the
#    older segments are reported evicted.
#
# The waits poll for a state (bounded, so a failure does not hang); no
# assertion is about time.
set -euo pipefail

D9=$(realpath "$1")
OUT=$2
rm -rf "$OUT"
mkdir -p "$OUT"
OUT=$(realpath "$OUT")
pass=0

ok() { echo "ok - $*"; pass=$((pass + 1)); }
fail() { echo "not ok - $*"; exit 1; }
unset DIAL9_S3_BUCKET DIAL9_WRITE_BACK_DIR DIAL9_MODE DIAL9_STORAGE

# Context switches, as many each run: $1 round trips over a pipe (about
# 100 bytes of trace each).
PUMP='perf bench sched pipe -l $1 >/dev/null'

# until_ DESC CMD...: poll CMD for up to 30 s.
until_() {
	local what=$1
	shift
	for _ in $(seq 300); do
		"$@" && return 0
		sleep 0.1
	done
	fail "$what"
}

# field LOG REGEX: the number that REGEX's parenthesised group matches.
field() { sed -n -E "s/.*$2.*/\\1/p" "$1" | head -n1; }

# segments DIR NAME: segment indexes (of files named *NAME) below DIR.
segments() {
	find "$1" -name "*$2" 2>/dev/null | sed -E 's|.*/0*([0-9]+)\..*|\1|' | sort -n
}
count() { segments "$1" "$2" | wc -l; }

# ---- disk budget -------------------------------------------------------
DIAL9_MAX_DISK_USAGE_MB=1 "$D9" record \
	-o "$OUT/budget" -- sh -c "$PUMP" pump 30000 2>"$OUT/budget.log"
cat "$OUT/budget.log"
sealed=$(field "$OUT/budget.log" '; ([0-9]+) segments in ')
evicted=$(field "$OUT/budget.log" ', ([0-9]+) evicted by the disk budget')
bytes=$(find "$OUT/budget" -name '*.dial9' -printf '%s\n' | awk '{s += $1} END {print s + 0}')
left=$(count "$OUT/budget" .dial9)
echo "budget: $sealed sealed, $evicted evicted, $left left, $bytes bytes"
[ "$bytes" -le 1048576 ] && [ "$left" -ge 1 ] ||
	fail "disk budget: $bytes bytes in $left segments on disk, budget 1 MiB"
[ "$evicted" -ge 1 ] && [ $((left + evicted)) -eq "$sealed" ] ||
	fail "disk budget: $sealed sealed, but $left on disk and $evicted reported evicted"
[ "$(segments "$OUT/budget" .dial9 | head -n1)" -eq $((evicted + 1)) ] ||
	fail "disk budget: the oldest segments were not the ones evicted"
# The scheduler's events of one flush are cut into batches of at most a
# segment's size (256 KiB here, a quarter of the budget; and the record
# and the stream's end that reach it): segments rotate at that size, so
# the newest ones stay, not none.
big=$(find "$OUT/budget" -name '*.dial9' -printf '%s
' | sort -n | tail -n1)
[ "$big" -le $((262144 + 4096)) ] && [ "$left" -ge 3 ] ||
	fail "disk budget: segments of up to $big bytes, $left left: not cut at 256 KiB"
"$D9" sched "$OUT/budget" >"$OUT/budget-sched.txt" ||
	fail "disk budget: dial9 sched cannot read what is left"
ok "disk budget: $bytes bytes on disk (1 MiB), $evicted of $sealed segments evicted, oldest first, and reported; $left left, the largest $big bytes"

# ---- trigger mode, segments on disk, dumps to a write-back directory -----
# phased DIR THEN: a command that pumps, says so (DIR/pumped), waits
# for DIR/go, then runs THEN.
phased() {
	echo "$PUMP; touch $1/pumped; until [ -e $1/go ]; do sleep 0.1; done; $2"
}
sealed_one() { [ "$(count "$OUT/trig/local" .dial9)" -ge 1 ]; }
mkdir -p "$OUT/trig"
DIAL9_ROTATION_SECS=1 DIAL9_MODE=trigger DIAL9_TRIGGER_SIGNAL=USR2 \
	DIAL9_WRITE_BACK_DIR="$OUT/trig/wb" "$D9" record -o "$OUT/trig/local" \
	-- sh -c "$(phased "$OUT/trig" "$PUMP")" pump 3000 2>"$OUT/trig.log" &
rec=$!
until_ "trigger: the command did not run" test -e "$OUT/trig/pumped"
until_ "trigger: no segment sealed by rotation" sealed_one
before=$(count "$OUT/trig/local" .dial9)
[ "$(find "$OUT/trig/wb" -type f 2>/dev/null | wc -l)" -eq 0 ] ||
	fail "trigger: shipped before any dump: $(find "$OUT/trig/wb" -type f)"
ok "trigger: $before sealed segments, nothing shipped before a dump"
kill -USR2 $rec
shipped_all() { [ "$(count "$OUT/trig/wb" .dial9.lz4)" -ge "$before" ]; }
until_ "trigger: kill -USR2 shipped no dump" shipped_all
touch "$OUT/trig/go"
wait $rec || fail "trigger: dial9 record failed"
cat "$OUT/trig.log"
wb=$(count "$OUT/trig/wb" .dial9.lz4)
[ "$(field "$OUT/trig.log" 'shipped ([0-9]+) segments')" -eq "$wb" ] ||
	fail "trigger: $wb segments in the write-back directory, not what dial9 record reports"
grep -q 'trigger mode: 1 dumps shipped' "$OUT/trig.log" ||
	fail "trigger: dial9 record does not report the dump"
newest=$(segments "$OUT/trig/wb" .dial9.lz4 | tail -n1)
kept=$(segments "$OUT/trig/local" .dial9 | head -n1)
[ -n "$kept" ] && [ "$newest" -lt "$kept" ] ||
	fail "trigger: segments sealed after the dump were shipped (or none stayed on disk)"
[ "$(segments "$OUT/trig/local" .dial9 | wc -l)" -eq \
  $(($(field "$OUT/trig.log" '; ([0-9]+) segments in ') - wb)) ] ||
	fail "trigger: a shipped segment stayed on disk, or one is missing"
ok "trigger: kill -USR2 shipped the $wb segments up to #$newest, reported; #$kept on stayed on disk"

# ---- memory mode ---------------------------------------------------------
DIAL9_ROTATION_SECS=1 DIAL9_STORAGE=memory DIAL9_WRITE_BACK_DIR="$OUT/mem/wb" \
	"$D9" record -o "$OUT/mem/local" -- sh -c "$PUMP; sleep 1.2; $PUMP" \
	pump 3000 2>"$OUT/mem.log"
cat "$OUT/mem.log"
grep -q ' segments in memory:' "$OUT/mem.log" ||
	fail "memory: dial9 record does not say the segments were in memory"
[ "$(find "$OUT/mem/local" -type f 2>/dev/null | wc -l)" -eq 0 ] ||
	fail "memory: files under the trace directory: $(find "$OUT/mem/local" -type f)"
sealed=$(field "$OUT/mem.log" '; ([0-9]+) segments in ')
wb=$(count "$OUT/mem/wb" .dial9.lz4)
[ "$sealed" -ge 1 ] && [ "$wb" -eq "$sealed" ] &&
	grep -q "shipped $sealed segments (0 failed" "$OUT/mem.log" ||
	fail "memory: $sealed sealed, $wb in the write-back directory"
"$D9" sched "$OUT/mem/wb" >"$OUT/mem-sched.txt" ||
	fail "memory: dial9 sched cannot read the shipped segments"
ok "memory: nothing on disk, the $sealed segments shipped from memory"

# Trigger mode in memory under a 1 MiB budget: the dump is the newest
# segments within it, the older ones evicted and reported.
mkdir -p "$OUT/memtrig"
DIAL9_STORAGE=memory DIAL9_MEMORY_BUDGET_MB=1 \
	DIAL9_MODE=trigger DIAL9_TRIGGER_SIGNAL=USR2 \
	DIAL9_WRITE_BACK_DIR="$OUT/memtrig/wb" "$D9" record \
	-o "$OUT/memtrig/local" -- sh -c "$(phased "$OUT/memtrig" true)" pump 30000 \
	2>"$OUT/memtrig.log" &
rec=$!
until_ "memory trigger: the command did not run" test -e "$OUT/memtrig/pumped"
[ "$(find "$OUT/memtrig" -name '*.dial9*' | wc -l)" -eq 0 ] ||
	fail "memory trigger: a segment on disk or shipped before a dump"
kill -USR2 $rec
shipped_some() { [ "$(count "$OUT/memtrig/wb" .dial9.lz4)" -ge 1 ]; }
until_ "memory trigger: kill -USR2 shipped no dump" shipped_some
touch "$OUT/memtrig/go"
wait $rec || fail "memory trigger: dial9 record failed"
cat "$OUT/memtrig.log"
evicted=$(field "$OUT/memtrig.log" ', ([0-9]+) evicted by the memory budget')
wb=$(count "$OUT/memtrig/wb" .dial9.lz4)
bytes=0
for f in $(find "$OUT/memtrig/wb" -name '*.dial9.lz4'); do
	bytes=$((bytes + $(lz4 -dc "$f" | wc -c)))
done
echo "memory trigger: $wb shipped ($bytes bytes), $evicted evicted"
[ "$bytes" -le 1048576 ] ||
	fail "memory trigger: the dump holds $bytes bytes, over the 1 MiB budget"
[ "$evicted" -ge 1 ] && [ "$(segments "$OUT/memtrig/wb" .dial9.lz4 | head -n1)" -gt "$evicted" ] ||
	fail "memory trigger: $evicted reported evicted, the dump starts at #$(segments "$OUT/memtrig/wb" .dial9.lz4 | head -n1)"
[ "$(field "$OUT/memtrig.log" 'shipped ([0-9]+) segments')" -eq "$wb" ] &&
	grep -q 'trigger mode: 1 dumps shipped' "$OUT/memtrig.log" ||
	fail "memory trigger: dial9 record does not report the dump it shipped"
[ "$(find "$OUT/memtrig/local" -type f 2>/dev/null | wc -l)" -eq 0 ] ||
	fail "memory trigger: files under the trace directory"
ok "memory trigger: the dump is $wb segments, $bytes bytes (1 MiB budget), $evicted older ones evicted and reported"

echo "settings: $pass passed"
