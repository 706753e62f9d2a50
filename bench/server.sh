#!/bin/sh
# A real server from Debian under its own load generator, recorded and
# not (make bench-server; not part of make test).  redis 7 (redis-tools:
# its server binary is redis-check-rdb, a server when named
# redis-server) pinned to CPU 0, redis-benchmark pinned to CPU 1 (0 on a
# machine of one CPU) over a
# unix socket, REPS interleaved runs each of: no recording (none), and
# `dial9 record -- taskset -c 0 redis-server` (dial9, the recorder
# wherever the scheduler puts it).  Per run: the requests per second
# redis-benchmark reports (SET and GET, REQS each, 50 clients), the
# server's CPU (its threads' schedstat), the recorder's (dial9 record's
# summary) and, from the trace, the culprits of the server's main thread
# (dial9 sched --culprits).  Prints SERVERBENCH lines, then the ratios.
#   [D9_BENCH_DIR=DIR] bench/server.sh [REQS [REPS [DIAL9]]]
set -eu
reqs=${1:-200000}
reps=${2:-3}
dial9=${3:-build/tools/dial9}
# the trace and the workers' files: on the host's /tmp, or where
# D9_BENCH_DIR says (the VM: an ext4 file system on its disk)
tmp=$(mktemp -d "${D9_BENCH_DIR:-/tmp}/d9-server.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
ln -s /usr/bin/redis-check-rdb "$tmp/redis-server"
sock=$tmp/redis.sock
# The load generator on CPU 1, or beside the server on a machine of one.
lcpu=1
[ "$(nproc)" -ge 2 ] || lcpu=0

# The CPU time of every thread of process $1 (ns, schedstat's first field).
cpu_ns() {
	cat /proc/"$1"/task/*/schedstat 2>/dev/null | awk '{ s += $1 } END { print s + 0 }'
}

run() {	# CFG REP
	cfg=$1 rep=$2
	rm -f "$sock" "$tmp/out" "$tmp/err"
	rm -rf "$tmp/rec"
	srv="taskset -c 0 $tmp/redis-server --port 0 --unixsocket $sock --save '' --appendonly no --daemonize no --loglevel warning"
	case $cfg in
	none) sh -c "exec $srv" >/dev/null 2>&1 & ;;
	dial9) sh -c "exec $dial9 record -o $tmp/rec -- $srv" >/dev/null 2>"$tmp/err" & ;;
	esac
	launcher=$!
	i=0
	while ! redis-cli -s "$sock" ping >/dev/null 2>&1; do
		i=$((i + 1)); [ $i -lt 200 ] || { echo "server.sh: redis did not start" >&2; cat "$tmp/err" >&2; exit 1; }
		sleep 0.05
	done
	pid=$(redis-cli -s "$sock" info server | tr -d '\r' | sed -n 's/^process_id://p')
	c0=$(cpu_ns "$pid")
	taskset -c "$lcpu" redis-benchmark -s "$sock" -n "$reqs" -c 50 -t set,get -q >"$tmp/out" 2>&1
	c1=$(cpu_ns "$pid")
	redis-cli -s "$sock" shutdown nosave >/dev/null 2>&1 || true
	wait "$launcher" 2>/dev/null || true
	set_rps=$(tr '\r' '\n' <"$tmp/out" | sed -n 's/^SET: \([0-9.]*\) requests per second.*/\1/p' | tail -n 1)
	get_rps=$(tr '\r' '\n' <"$tmp/out" | sed -n 's/^GET: \([0-9.]*\) requests per second.*/\1/p' | tail -n 1)
	rec_ms=- per_rec=- culprits=- backend=-
	if [ "$cfg" = dial9 ]; then
		rec_ms=$(sed -n 's/.*recorder.s threads used \([0-9.]*\) ms of CPU.*/\1/p' "$tmp/err")
		per_rec=$(sed -n 's/.*ms of CPU (\([0-9]*\) ns per scheduler record).*/\1/p' "$tmp/err")
		backend=$(sed -n 's/.*scheduler records from \([^ ]*\) .*/\1/p' "$tmp/err" | head -n 1)
		# the server's main thread (tid = pid): its first 3 culprits
		culprits=$("$dial9" sched --culprits --json --tid "$pid" "$tmp/rec" 2>/dev/null |
			grep -o '"culprits":\[[^]]*\]' | head -n 1 |
			grep -o '"name":"[^"]*","tid":[^,]*,"pid":[^,]*,"ns":[0-9]*' |
			sed 's/"name":"\([^"]*\)".*"ns":\([0-9]*\)/\2|\1/' |
			awk -F'|' '{ ns[NR] = $1; nm[NR] = $2; all += $1 }
				END { for (i = 1; i <= NR && i <= 3; i++)
					printf "%s%s:%.1f%%", (i > 1 ? "," : ""), nm[i], 100 * ns[i] / all
				  if (!NR) printf "none"
				  # the recorder threads: their share, their best rank
				  for (i = 1; i <= NR; i++)
					if (nm[i] ~ /^(dial9|iou-wrk)/) { rec += ns[i]; if (!rank) rank = i }
				  printf " recorder_culprit=%.1f%% recorder_rank=%s", 100 * rec / (all ? all : 1), rank ? rank : "none" }')
	fi
	echo "SERVERBENCH cfg=$cfg rep=$rep set_rps=${set_rps:-0} get_rps=${get_rps:-0} server_cpu_ms=$(( (c1 - c0) / 1000000 )) recorder_cpu_ms=${rec_ms:-0} ns_per_record=${per_rec:-0} backend=${backend:-?} culprits=$culprits"
}

r=1
while [ "$r" -le "$reps" ]; do
	run none "$r" | tee -a "$tmp/lines"
	run dial9 "$r" | tee -a "$tmp/lines"
	r=$((r + 1))
done
awk '
	{ for (i = 2; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
	  c = v["cfg"]; n[c]++; set[c] += v["set_rps"]; get[c] += v["get_rps"]
	  srv[c] += v["server_cpu_ms"]; rec[c] += v["recorder_cpu_ms"] }
	END {
		printf "throughput dial9/none: SET %.3f, GET %.3f\n", set["dial9"] / set["none"], get["dial9"] / get["none"]
		printf "recorder CPU / server CPU (dial9 runs): %.2f%% (%.1f ms of %.1f ms per run)\n",
			100 * rec["dial9"] / srv["dial9"], rec["dial9"] / n["dial9"], srv["dial9"] / n["dial9"]
	}' "$tmp/lines"
