#!/bin/sh
# SPDX-License-Identifier: MIT
# shipped.sh DIR - what the worker ships from a real recording (make
# test-tools, issue 24): `dial9 record` of a program built here, with the
# CPU profile (--cpu-hz) and without DIAL9_SCHED_STACKS, rotating every
# second (DIAL9_ROTATION_SECS=1), written back to another directory
# (DIAL9_WRITE_BACK_DIR) with a summary per segment.  Then, as on another
# host (the program moved away, no debug directory): each shipped
# segment's CPU samples are named from its own symbol table; and every
# summary row names its thread, in the segments after the one where the
# kernel named it as in that one.  Recorded again with DIAL9_SYMBOLS=0:
# each segment after the first, read alone without a table, has its
# samples inside the mappings it carries (object+offset).  Exit 77 (a
# skip) where perf events (or their CPU samples) are not permitted.  DIR
# as for synthetic.sh.
set -eu
. tests/tools/lib.sh
T=$B/shipped
CC=${CC:-cc}

rm -rf "$T"
mkdir -p "$T/trace" "$T/wb" "$T/away" "$T/nodebug" "$T/nomaps"

# The main thread spins in shipped_hot() between sleeps; a second thread
# names itself and sleeps in short steps: both run in every segment.
# It prints "MAIN_TID SLEEPER_TID".
cat > "$T/prog.c" <<'EOF'
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>
#include <sys/syscall.h>

static volatile int done;
static volatile long sleeper_tid;

static uint64_t cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

__attribute__((noinline)) void shipped_hot(volatile uint64_t *x)
{
	for (int i = 0; i < 100000; i++)
		*x += (uint64_t)i;
}

__attribute__((noinline)) static void spin(unsigned int ms)
{
	volatile uint64_t x = 0;
	uint64_t end = cpu_ns() + ms * 1000000ull;

	while (cpu_ns() < end)
		shipped_hot(&x);
}

static void *sleeper(void *a)
{
	(void)a;
	pthread_setname_np(pthread_self(), "shipped-sleep");
	sleeper_tid = syscall(SYS_gettid);
	while (!done)
		usleep(5000);
	return NULL;
}

int main(void)
{
	pthread_t t;

	if (pthread_create(&t, NULL, sleeper, NULL))
		return 1;
	spin(200);
	for (int i = 0; i < 30; i++) {
		usleep(100000);
		spin(10);
	}
	done = 1;
	pthread_join(t, NULL);
	printf("%ld %ld\n", (long)syscall(SYS_gettid), sleeper_tid);
	return 0;
}
EOF
$CC -O1 -g -fno-omit-frame-pointer -pthread -o "$T/shipped-prog" "$T/prog.c"

step "dial9 record: CPU samples without DIAL9_SCHED_STACKS, rotated, written back"
rc=0
env -u DIAL9_SCHED_STACKS -u DIAL9_SYMBOLS -u DIAL9_COMPRESS -u DIAL9_MODE \
	-u DIAL9_STORAGE -u DIAL9_TRACE_DIR -u DIAL9_S3_BUCKET \
	DIAL9_ROTATION_SECS=1 DIAL9_WRITE_BACK_DIR="$PWD/$T/wb" \
	DIAL9_HOST_NAME=shipped-host \
	"$D9" record -o "$T/trace" --cpu-hz 1000 -- "$T/shipped-prog" \
	> "$T/prog.out" 2> "$T/record.err" || rc=$?
if grep -qE 'cannot record the scheduling|no CPU samples: ' "$T/record.err"; then
	cat "$T/record.err"
	echo "SKIP: perf events or their CPU samples are not permitted here"
	exit 77
fi
[ "$rc" = 0 ] || bad "dial9 record: exit $rc: $(cat "$T/record.err")"
grep -qE '^dial9 record: [1-9][0-9]* CPU samples at 1000 Hz' "$T/record.err" ||
	bad "dial9 record: no CPU samples: $(cat "$T/record.err")"
grep -qE '^dial9 record: shipped [1-9][0-9]* segments \(0 failed' "$T/record.err" ||
	bad "dial9 record: not shipped: $(grep shipped "$T/record.err")"
main_tid=- sleeper_tid=-
read -r main_tid sleeper_tid < "$T/prog.out" || bad "the program's tids: $(cat "$T/prog.out")"
boot=$(find "$T/wb" -mindepth 1 -maxdepth 1 -type d ! -name summary)
[ -n "$boot" ] && [ "$(echo "$boot" | wc -l)" = 1 ] || bad "write-back: boot directories: $boot"
segs=$(if [ -d "$boot" ]; then find "$boot" -name '*.dial9.lz4' | sort; fi)
nseg=$(echo "$segs" | grep -c . || true)
[ "$nseg" -ge 2 ] || bad "write-back: $nseg segments, want 2 or more (rotation every second)"
ok "recorded: $nseg segments shipped, $(sed -n 's/^dial9 record: \([0-9]*\) CPU samples.*/\1/p' "$T/record.err") CPU samples"

step "read elsewhere: each shipped segment's samples named from its own table"
# another host: the program is not there, nor any debug file or map
mv "$T/shipped-prog" "$T/away/"
nsampled=0 nhot=0
for s in $segs; do
	n=$(basename "$s" .dial9.lz4)
	"$D9" dump "$s" > "$T/seg-$n.jsonl" || bad "dump $s: exit status"
	grep -q '"name":"sched.stack"' "$T/seg-$n.jsonl" &&
		bad "$s: sched.stack events without DIAL9_SCHED_STACKS"
	grep -q '"name":"sched.sample"' "$T/seg-$n.jsonl" || continue
	nsampled=$((nsampled + 1))
	# (the trace's own symbol table: sched.symbol events)
	grep -q '"name":"sched.symbol"' "$T/seg-$n.jsonl" ||
		bad "$s: CPU samples but no symbol table"
	DIAL9_DEBUG_DIR=$PWD/$T/nodebug DIAL9_PERF_MAP_DIR=$PWD/$T/nomaps \
		"$D9" flame --on-cpu "$s" > "$T/flame-$n.txt" 2> "$T/flame-$n.err" ||
		bad "flame --on-cpu $s: exit status: $(cat "$T/flame-$n.err")"
	# the main thread's samples end in shipped_hot, by name (in
	# segments it spun in: the last may hold its exit alone)
	grep -qE "^[^;]* $main_tid;.*;shipped_hot [0-9]+\$" "$T/flame-$n.txt" &&
		nhot=$((nhot + 1))
	# no frame of the program left unnamed (object+0xoffset, or
	# [object] as unnamed frames are folded); the thread's name aside
	! sed 's/^[^;]*;//' "$T/flame-$n.txt" | grep -q 'shipped-prog' ||
		bad "$s: frames of the program unnamed: $(cat "$T/flame-$n.txt")"
	grep -q "frames named from the trace's symbol table (made on the recording host), 0 from the files here" "$T/flame-$n.err" ||
		bad "$s: not named from its table: $(cat "$T/flame-$n.err")"
done
[ "$nsampled" -ge 2 ] || bad "$nsampled shipped segments with CPU samples, want 2 or more"
[ "$nhot" -ge 2 ] || bad "shipped_hot named in $nhot segments, want 2 or more: $(cat "$T"/flame-*.txt)"
ok "$nsampled shipped segments with samples, each named from its own table ($nhot with shipped_hot)"

step "summaries: every row names its thread, in every segment"
find "$T/wb/summary" -name '*.json.gz' | sort > "$T/summaries.txt"
[ "$(grep -c . "$T/summaries.txt")" -ge 2 ] ||
	bad "$(grep -c . "$T/summaries.txt") summaries for $nseg segments, want 2 or more"
# the rows; and each segment's tids that a sched.comm names in it
node -e '
const fs = require("fs"), zlib = require("zlib");
const [list, dir, mainTid, sleeperTid] = process.argv.slice(1);
const want = { [mainTid]: "shipped-prog", [sleeperTid]: "shipped-sleep" };
let rows = 0, renamed = 0, bad = 0;
for (const f of fs.readFileSync(list, "utf8").split("\n").filter((l) => l)) {
	const lines = zlib.gunzipSync(fs.readFileSync(f)).toString("utf8")
		.split("\n").filter((l) => l).map((l) => JSON.parse(l));
	for (const r of lines) {
		rows++;
		const seg = String(r.segment_index).padStart(8, "0");
		const commed = new Set(fs.readFileSync(`${dir}/seg-${seg}.jsonl`, "utf8")
			.split("\n").filter((l) => l.includes("\"sched.comm\""))
			.map((l) => JSON.parse(l).fields.tid));
		if (!commed.has(r.tid)) renamed++;
		if (typeof r.thread !== "string" || r.thread === "" ||
		    (want[r.tid] && r.thread !== want[r.tid])) {
			console.log(`segment ${r.segment_index}: tid ${r.tid} thread ${JSON.stringify(r.thread)}` +
				(want[r.tid] ? `, want ${want[r.tid]}` : ""));
			bad++;
		}
	}
}
console.log(`${rows} rows, ${renamed} of threads the segment has no sched.comm of, ${bad} without their name`);
/* rows of threads named only in an earlier segment must be there */
process.exit(bad || !rows || !renamed ? 1 : 0);
' "$T/summaries.txt" "$T" "$main_tid" "$sleeper_tid" || bad "summary rows without their thread's name"
ok "every summary row names its thread"

step "no symbol table (DIAL9_SYMBOLS=0): each segment, read alone, has the mappings of its frames"
# Every segment after a rotation carries the mappings again
# (sched.mapping): without a table, its samples are object+offset, not
# "[unknown]" (the kernel's records hold addresses only).
mkdir -p "$T/trace-nosym" "$T/wb-nosym"
rc=0
env -u DIAL9_SCHED_STACKS -u DIAL9_COMPRESS -u DIAL9_MODE \
	-u DIAL9_STORAGE -u DIAL9_TRACE_DIR -u DIAL9_S3_BUCKET \
	DIAL9_SYMBOLS=0 DIAL9_ROTATION_SECS=1 \
	DIAL9_WRITE_BACK_DIR="$PWD/$T/wb-nosym" DIAL9_HOST_NAME=shipped-host \
	"$D9" record -o "$T/trace-nosym" --cpu-hz 1000 -- "$T/away/shipped-prog" \
	> "$T/prog-nosym.out" 2> "$T/record-nosym.err" || rc=$?
[ "$rc" = 0 ] || bad "dial9 record: exit $rc: $(cat "$T/record-nosym.err")"
main_tid=-
read -r main_tid _ < "$T/prog-nosym.out" || bad "the program's tids: $(cat "$T/prog-nosym.out")"
segs=$(find "$T/wb-nosym" -name '*.dial9.lz4' ! -name 00000001.dial9.lz4 | sort)
nlater=0
for s in $segs; do
	n=$(basename "$s" .dial9.lz4)
	"$D9" dump "$s" > "$T/nosym-$n.jsonl" || bad "dump $s: exit status"
	grep -q '"name":"sched.symbol"' "$T/nosym-$n.jsonl" &&
		bad "$s: a symbol table with DIAL9_SYMBOLS=0"
	"$D9" flame --on-cpu --no-symbols --tid "$main_tid" "$s" \
		> "$T/nosym-$n.txt" 2> "$T/nosym-$n.err" ||
		bad "flame --on-cpu $s: exit status: $(cat "$T/nosym-$n.err")"
	grep -q . "$T/nosym-$n.txt" || continue	# the exit alone
	nlater=$((nlater + 1))
	grep -q '"name":"sched.mapping"' "$T/nosym-$n.jsonl" ||
		bad "$s: CPU samples but no sched.mapping"
	# each sample's instruction (the last frame) is object+offset: in
	# the program, libc or the vDSO, never outside every mapping
	if grep ';' "$T/nosym-$n.txt" | sed 's/ [0-9]*$//; s/.*;//' |
		grep -qvE '^[^ ;]+\+0x[0-9a-f]+$'; then
		bad "$s: samples outside every mapping: $(cat "$T/nosym-$n.txt" "$T/nosym-$n.err")"
	fi
	grep -q ';shipped-prog+0x[0-9a-f]*' "$T/nosym-$n.txt" ||
		bad "$s: no frame in the program: $(cat "$T/nosym-$n.txt")"
done
[ "$nlater" -ge 1 ] || bad "$nlater segments after the first with the main thread's samples, want 1 or more"
ok "$nlater segments after the first, each read alone: the samples in their mappings"

finish shipped
