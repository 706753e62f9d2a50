#!/bin/sh
# Turn the BENCH lines of the benchmark VMs' console logs into the tables
# of docs/benchmarks.md.  Usage: sched-table.sh COST_LOG LOSS_LOG [IDLE_LOG...]
#
# Cost: per workload and configuration, the median over the repetitions of
# the workload's own time per round trip (guest ns under -icount, i.e.
# instructions), its ratio to no tracing, the spread of the repetitions
# ((max - min) / median), and the events captured and lost per run.
cost=$1 loss=$2
if [ $# -ge 2 ]; then shift 2; else shift $#; fi
table() {
tr -d '\r' <"$cost" | grep "^BENCH part=$1 " | awk '
function kv(s,   i, a) { for (i = 1; i <= NF; i++) { split($i, a, "="); v[a[1]] = a[2] } }
function median(key, n,   i, j, t, x) {
	for (i = 1; i <= n; i++) x[i] = t_[key, i]
	for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++)
		if (x[j] < x[i]) { t = x[i]; x[i] = x[j]; x[j] = t }
	return n % 2 ? x[(n + 1) / 2] : (x[n / 2] + x[n / 2 + 1]) / 2
}
{
	delete v; kv()
	key = v["wl"] SUBSEP v["cfg"]
	if (!(key in n)) { order[++nk] = key }
	n[key]++
	t_[key, n[key]] = v["ns_per_rt"] + 0
	if (!(key in mn) || v["ns_per_rt"] < mn[key]) mn[key] = v["ns_per_rt"] + 0
	if (!(key in mx) || v["ns_per_rt"] > mx[key]) mx[key] = v["ns_per_rt"] + 0
	ev[key] = v["events"]; lo[key] = v["lost"]
	if ("rec_ns" in v) { rec[key] += v["rec_ns"]; nrec[key]++; anyrec = 1 }
	rounds[v["wl"]] = v["rounds"]
}
END {
	for (k = 1; k <= nk; k++) med[order[k]] = median(order[k], n[order[k]])
	printf "%-10s %-17s %9s %12s %8s %5s %9s %8s %7s%s\n", "workload", "config",
		"ratio", "ns/round-trip", "spread", "runs", "events", "ev/rt", "lost",
		anyrec ? "  rec-ns/rt rec-ns/ev" : ""
	for (k = 1; k <= nk; k++) {
		key = order[k]; split(key, p, SUBSEP)
		base = med[p[1] SUBSEP "none"]
		per = "-"
		if (ev[key] > 0 && rounds[p[1]] > 0) per = sprintf("%.2f", ev[key] / rounds[p[1]])
		r = ""
		if (key in nrec && rounds[p[1]] > 0)
			r = sprintf(" %10.1f %9.1f", rec[key] / nrec[key] / rounds[p[1]],
				    ev[key] > 0 ? rec[key] / nrec[key] / ev[key] : 0)
		printf "%-10s %-17s %8.3fx %12.1f %7.2f%% %5d %9s %8s %7s%s\n", p[1], p[2],
			med[key] / base, med[key], 100 * (mx[key] - mn[key]) / med[key],
			n[key], ev[key], per, lo[key], r
	}
}'
}
echo "Cost per round trip (1 vCPU, -icount), ratio to no tracing"
table cost
if tr -d '\r' <"$cost" | grep -q '^BENCH part=diag '; then
	echo
	echo "Where dial9's cost goes (own-process session, by record types)"
	table diag
fi
if tr -d '\r' <"$cost" | grep -q '^BENCH part=steady '; then
	echo
	echo "libdial9 at steady state: where segments go, what its defaults cost"
	table steady
fi
if tr -d '\r' <"$cost" | grep -q '^BENCH part=libdiag '; then
	echo
	echo "libdial9 recording itself: its flush thread at nice 0 (default) and 10"
	table libdiag
fi
# loss_table share|count WIDTH: one row per pair count, a column per
# configuration; "captured/lost" or lost / (captured + lost).
loss_table() {
	tr -d '\r' <"$loss" | grep '^BENCH part=loss' | awk -v mode="$1" -v w="$2" '
function kv(s,   i, a) { for (i = 1; i <= NF; i++) { split($i, a, "="); v[a[1]] = a[2] } }
{
	delete v; kv()
	if (!(v["cfg"] in seen)) { seen[v["cfg"]] = 1; cfgs[++nc] = v["cfg"] }
	if (!(v["pairs"] in seenp)) { seenp[v["pairs"]] = 1; ps[++np] = v["pairs"] }
	t = v["events"] + v["lost"]
	if (mode == "count")
		cell[v["pairs"], v["cfg"]] = v["events"] "/" v["lost"]
	else
		cell[v["pairs"], v["cfg"]] = t > 0 ? sprintf("%.2f%%", 100 * v["lost"] / t) : "-"
}
END {
	printf "%-6s", "pairs"
	for (c = 1; c <= nc; c++) printf " %*s", w, cfgs[c]
	printf "\n"
	for (i = 1; i <= np; i++) {
		printf "%-6s", ps[i]
		for (c = 1; c <= nc; c++) printf " %*s", w, cell[ps[i], cfgs[c]]
		printf "\n"
	}
}'
}
if [ -n "$loss" ]; then
	echo
	echo "Loss: pairs of ping-pong threads (2 vCPUs), events captured / lost per run"
	loss_table count 18
	echo
	echo "Lost share: lost / (captured + lost) per run"
	loss_table share 13
fi
# Idle recorders: from the cost boot (in the VM) and any IDLE_LOG (host).
idle=$(cat "$cost" "$@" 2>/dev/null | tr -d '\r' | grep '^BENCH part=idle ')
[ -n "$idle" ] || exit 0
echo
echo "Idle recorder: CPU and wake-ups per second of its threads (/proc)"
echo "$idle" | awk '
function kv(s,   i, a) { for (i = 1; i <= NF; i++) { split($i, a, "="); v[a[1]] = a[2] } }
BEGIN {
	printf "%-6s %-18s %-9s %5s %7s %12s %12s %10s\n", "where", "config",
		"backend", "tasks", "secs", "cpu_ms/s", "ticks_ms/s", "wakeups/s"
}
{
	delete v; kv()
	printf "%-6s %-18s %-9s %5d %7.2f %12.4f %12.2f %10.2f\n", v["where"],
		v["cfg"], v["backend"], v["tasks"], v["secs"], v["cpu_ms_per_s"],
		v["ticks_ms_per_s"], v["wakeups_per_s"]
}'
# The interrupts an idle recorder causes with no thread of its own woken
# (dial9.ko's sampling timers), against none (the cost boot only).
irq=$(tr -d '\r' <"$cost" 2>/dev/null | grep '^BENCH part=idleirq ')
[ -n "$irq" ] || exit 0
echo
echo "Idle recorder: local timer interrupts a second, all CPUs (/proc/interrupts LOC)"
echo "$irq" | awk '
function kv(s,   i, a) { for (i = 1; i <= NF; i++) { split($i, a, "="); v[a[1]] = a[2] } }
BEGIN { printf "%-18s %7s %10s %14s\n", "config", "secs", "LOC/s", "over none" }
{
	delete v; kv()
	if (v["cfg"] == "none")
		base = v["loc_per_s"]
	printf "%-18s %7.2f %10.2f %14.2f\n", v["cfg"], v["secs"], v["loc_per_s"],
		v["loc_per_s"] - base
}'
