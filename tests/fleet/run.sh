#!/bin/bash
# SPDX-License-Identifier: MIT
#
# tests/fleet/run.sh DIAL9 OUT - segment summaries across a fleet.
#
# Three hosts (distinct DIAL9_HOST_NAME) and two services record busy
# processes with dial9 record (DIAL9_* settings from the environment:
# one-second rotation, LZ4, S3) into the S3 test server on loopback
# (tests/s3/server.js). Then dial9 fetch brings the segments and the
# summaries into a directory laid out like the bucket, dial9 sched --json
# reads each segment, and check.mjs has DuckDB read the summaries there
# with Hive partitioning: every row against dial9 sched's figures for
# that thread of that segment, "worst p99 by host and service" against
# dial9 sched's, and dial9 fleet (from the directory and from S3)
# against DuckDB's ranking. A run whose S3 endpoint is gone must count
# its summaries as lost.
set -euo pipefail

D9=$(realpath "$1")
OUT=$2
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
rm -rf "$OUT"
mkdir -p "$OUT"
OUT=$(realpath "$OUT")
T0=$(date +%s)

node --openssl-legacy-provider "$ROOT/tests/s3/server.js" --port 0 \
	--dir "$OUT/s3" --bucket fleet >"$OUT/server.out" 2>"$OUT/server.err" &
SRV=$!
trap 'kill $SRV 2>/dev/null || true' EXIT
for _ in $(seq 100); do
	grep -q '^ready ' "$OUT/server.out" 2>/dev/null && break
	sleep 0.1
done
PORT=$(awk '/^ready /{print $2}' "$OUT/server.out")
[ -n "$PORT" ] || { echo "fleet: the S3 test server did not start"; cat "$OUT/server.err"; exit 1; }

export AWS_ACCESS_KEY_ID=dial9test AWS_SECRET_ACCESS_KEY=dial9secret
export DIAL9_S3_ENDPOINT=http://127.0.0.1:$PORT DIAL9_S3_BUCKET=fleet
export DIAL9_S3_PREFIX=fleet-traces DIAL9_ROTATION_SECS=1
BUCKET=s3://fleet/fleet-traces

# N shell loops counting to M on two CPUs: more of them, longer waits.
busy() {
	sh -c 'i=0; while [ $i -lt '"$1"' ]; do
		(j=0; while [ $j -lt '"$2"' ]; do j=$((j+1)); done) & i=$((i+1))
	done; wait'
}

record() { # host service loops count
	DIAL9_HOST_NAME=$1 DIAL9_SERVICE_NAME=$2 \
		"$D9" record --children -o "$OUT/local/$1-$2" -- \
		bash -c "$(declare -f busy); busy $3 $4" \
		2>"$OUT/record-$1-$2.log"
	cat "$OUT/record-$1-$2.log"
	grep -q 'summaries (0 lost)' "$OUT/record-$1-$2.log" ||
		{ echo "fleet: $1/$2: summaries were lost"; exit 1; }
}

record web-1 api 2 300000
record web-2 api 4 300000
record db-1 db 3 300000
record db-1 api 1 300000

# Everything below the prefix, laid out as in the bucket.
"$D9" fetch "$BUCKET" -o "$OUT/bucket"
"$D9" fetch "$BUCKET" --summaries -o "$OUT/bucket"
"$D9" ls "$BUCKET" --summaries >"$OUT/ls-summaries.txt"
nseg=$(find "$OUT/bucket/version=1" -name '*.bin.lz4' | wc -l)
nsum=$(find "$OUT/bucket/summary/version=1" -name '*.json.gz' | wc -l)
echo "fleet: $nseg segments, $nsum summaries"
[ "$nsum" -ge 4 ] && [ "$nsum" -le "$nseg" ] ||
	{ echo "fleet: expected a summary for (nearly) every segment"; exit 1; }
[ "$(wc -l <"$OUT/ls-summaries.txt")" -eq "$nsum" ] ||
	{ echo "fleet: dial9 ls --summaries lists $(wc -l <"$OUT/ls-summaries.txt") of $nsum"; exit 1; }

# sched_each ROOT DIR NAME OUT: dial9 sched --json on each segment
# named NAME under ROOT/DIR (DIR may be empty) alone, into OUT, and its
# path below ROOT into OUT/index.txt.
sched_each() {
	mkdir -p "$4"
	find "$1/$2" -name "$3" | sort | while read -r seg; do
		rel=${seg#"$1/"}
		"$D9" sched --json "$seg" >"$4/$(echo "$rel" | tr / _).json"
		echo "$rel" >>"$4/index.txt"
	done
}

# dial9 sched on each segment alone.
sched_each "$OUT/bucket" version=1 '*.bin.lz4' "$OUT/sched"

# dial9 fleet from the directory and from S3, and --fetch.
"$D9" fleet "$OUT/bucket" --json --top 100 >"$OUT/fleet-dir.json"
"$D9" fleet "$BUCKET" --json --top 100 --since 1h --until now \
	>"$OUT/fleet-s3.json"
"$D9" fleet "$OUT/bucket" --by thread --json --top 100 >"$OUT/fleet-threads.json"
"$D9" fleet "$OUT/bucket" --by host --json >"$OUT/fleet-hosts.json"
"$D9" fleet "$OUT/bucket" --by service --json >"$OUT/fleet-services.json"
"$D9" fleet "$OUT/bucket" --until 2020-01-01 --json >"$OUT/fleet-past.json"
"$D9" fleet "$OUT/bucket" --since yesterday | tee "$OUT/fleet.txt"
worst=$(awk '/^worst of #1: /{print $4}' "$OUT/fleet.txt")
[ -f "$worst" ] || { echo "fleet: the worst segment is not named as a local file: '$worst'"; exit 1; }
"$D9" sched "$worst" | grep -q 'max delay of' ||
	{ echo "fleet: dial9 sched finds no delay in the worst segment"; exit 1; }
"$D9" fleet "$BUCKET" --top 2 --fetch "$OUT/worst" >"$OUT/fleet-fetch.txt"

# A destination that is gone: the summaries are counted as lost.
DIAL9_HOST_NAME=gone DIAL9_SERVICE_NAME=api DIAL9_S3_ENDPOINT=http://127.0.0.1:1 \
	DIAL9_SHUTDOWN_TIMEOUT_MS=300 "$D9" record -o "$OUT/local/gone" -- \
	bash -c "$(declare -f busy); busy 2 40000" 2>"$OUT/record-gone.log" || true
cat "$OUT/record-gone.log"
grep -Eq ' 0 summaries \([1-9][0-9]* lost\)' "$OUT/record-gone.log" ||
	{ echo "fleet: summaries that could not be shipped are not counted as lost"; exit 1; }

# Write-back: the summaries in the same layout below the directory.
env -u DIAL9_S3_BUCKET DIAL9_HOST_NAME=wb-1 DIAL9_SERVICE_NAME=batch \
	DIAL9_WRITE_BACK_DIR="$OUT/wb" "$D9" record -o "$OUT/local/wb" -- \
	bash -c "$(declare -f busy); busy 2 300000" 2>"$OUT/record-wb.log"
cat "$OUT/record-wb.log"
grep -Eq ' [1-9][0-9]* summaries \(0 lost\)' "$OUT/record-wb.log" ||
	{ echo "fleet: write-back: no summaries, or lost ones"; exit 1; }
sched_each "$OUT/wb" "" '*.dial9.lz4' "$OUT/sched-wb"
"$D9" fleet "$OUT/wb" --json >"$OUT/fleet-wb.json"

cd "$HERE" && node check.mjs "$OUT"
echo "fleet: $(($(date +%s) - T0)) s"
