#!/bin/sh
# The one table of `make bench`: every figure as a ratio to its baseline,
# the absolute values beside it.  Reads the "BENCH part=..." lines of
# record_bench (part 3) and dial9-e2e (parts 4 and 5; host.log, vm.log,
# vm-icount.log); docs/benchmarks.md says what each row means.
#
#   bench-table.sh LOG...
#
# Part 4: in each repetition every configuration ran once, so a ratio is
# taken within a repetition (app / off of the same repetition) and the
# table shows the median over repetitions and their spread
# ((max - min) / median of the per-repetition ratios).
cat "$@" | tr -d '\r' | grep '^BENCH part=' | awk '
function kv(   i, a) { delete v; for (i = 2; i <= NF; i++) { split($i, a, "="); v[a[1]] = a[2] } }
function sortn(arr, n,   i, j, t) {
	for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++)
		if (arr[j] < arr[i]) { t = arr[i]; arr[i] = arr[j]; arr[j] = t }
}
function med(arr, n) { sortn(arr, n); return n % 2 ? arr[(n + 1) / 2] : (arr[n / 2] + arr[n / 2 + 1]) / 2 }
function spread(arr, n,   m) { m = med(arr, n); return m ? (arr[n] - arr[1]) / m : 0 }
function row(part, fig, where, cfg, ratio, value, base, sp, n) {
	printf "%-4s %-34s %-10s %-10s %8s  %-16s %-24s %7s %3s\n", part, fig, where, cfg, ratio, value, base, sp, n
}
function x(r) { return sprintf("%.3fx", r) }
function pct(s) { return sprintf("%.1f%%", 100 * s) }
function mib(b) { return sprintf("%.2f MiB", b / 1048576) }
{ kv() }
v["part"] == "3" { p3[v["threads"]] = $0; next }
v["part"] == "4" {
	w = v["where"]; c = v["cfg"]; r = v["rep"]
	if (!(w in seenw)) { seenw[w] = 1; wh[++nw] = w }
	sched[w] = v["backend"] != "-" && c == "sched" ? v["backend"] : sched[w]
	tput[w, c, r] = v["tput"]; p99[w, c, r] = v["p99_us"]
	if (r > reps[w]) reps[w] = r
	sev[w, c] += v["sched_events"]; slost[w, c] += v["sched_lost"]
	alost[w, c] += v["lost"]; aev[w, c] += v["events"]
	fcpu[w, c, r] = v["flush_cpu_ns"]; fbytes[w, c, r] = v["bytes"]; fsecs[w, c, r] = v["secs"]
	reqs[w] = v["reqs"]
	next
}
v["part"] == "5" { b5[v["where"], v["kind"]] = $0; next }
v["part"] == "rate" { rt3[++nrt] = $0; next }
v["part"] == "idle" { idle[v["where"], v["cfg"]] = v["flush_cpu_ns"] / v["wall_ns"]; next }
v["part"] == "mem" {
	w = v["where"]; c = v["cfg"]; r = v["rep"]
	mem[w, c, r] = v["rss1"] - v["rss0"]; memthr[w] = v["threads"]; buf[w] = v["buffer"]
	if (r > mreps[w]) mreps[w] = r
	next
}
END {
	print "dial9 benchmarks (make bench): each figure as a ratio to its baseline, absolute values beside it"
	row("part", "figure", "where", "config", "ratio", "value", "baseline", "spread", "n")
	# ---- part 3
	for (t = 1; t <= 2; t++) {
		if (!(t in p3)) continue
		$0 = p3[t]; kv()
		row(3, "record ns/event, " t " thread" (t > 1 ? "s" : ""), "host", "dial9", x(v["dial9"] / v["raw_tsc"]),
		    sprintf("%.1f ns", v["dial9"]), sprintf("raw append %.1f ns", v["raw_tsc"]), "-", 1)
		if (v["lttng_ok"] == 1) {
			row(3, "record ns/event, " t " thread" (t > 1 ? "s" : ""), "host", "lttng-ust", x(v["lttng"] / v["raw_tsc"]),
			    sprintf("%.1f ns", v["lttng"]), sprintf("raw append %.1f ns", v["raw_tsc"]), "-", 1)
			row(3, "  lttng-ust / dial9", "host", "lttng-ust", x(v["lttng"] / v["dial9"]),
			    sprintf("%.1f ns", v["lttng"]), sprintf("dial9 %.1f ns", v["dial9"]), "-", 1)
		}
		row(3, "bytes/event on disk (2 x u64)", "host", "dial9", x(v["dial9_bpe"] / 24),
		    sprintf("%.2f B", v["dial9_bpe"]), "24 B raw record", "-", 1)
		if (v["lttng_ok"] == 1)
			row(3, "bytes/event on disk (2 x u64)", "host", "lttng-ust", x(v["lttng_bpe"] / 24),
			    sprintf("%.2f B", v["lttng_bpe"]), "24 B raw record", "-", 1)
	}
	# ---- part 3: the highest rate of application events sustained
	for (i = 1; i <= nrt; i++) {
		$0 = rt3[i]; kv()
		t = v["threads"] " thread" (v["threads"] > 1 ? "s" : "")
		row(3, "sustained M ev/s/thread, " t, v["where"], "dial9", x(v["max_rate"] ? v["sustained_rate"] / v["max_rate"] : 0),
		    sprintf("%.1f M/s", v["sustained_rate"] / 1e6), sprintf("producer max %.1f M/s", v["max_rate"] / 1e6), "-", 1)
	}
	# ---- part 4
	for (i = 1; i <= nw; i++) {
		w = wh[i]; n = reps[w]
		for (ci = 1; ci <= 2; ci++) {
			c = ci == 1 ? "app" : "sched"
			cname = c == "sched" ? "sched:" (sched[w] == "dial9.ko" ? "ko" : sched[w]) : c
			split("", rt); split("", rp); split("", a); split("", b); split("", pa); split("", pb)
			for (r = 1; r <= n; r++) {
				rt[r] = tput[w, c, r] / tput[w, "off", r]; rp[r] = p99[w, c, r] / p99[w, "off", r]
				a[r] = tput[w, c, r]; b[r] = tput[w, "off", r]; pa[r] = p99[w, c, r]; pb[r] = p99[w, "off", r]
			}
			m = med(rt, n); s = spread(rt, n)
			row(4, "throughput (req/s)", w, cname, x(m), sprintf("%.0f", med(a, n)),
			    sprintf("off %.0f", med(b, n)), pct(s), n)
			m = med(rp, n); s = spread(rp, n)
			row(4, "p99 latency", w, cname, x(m), sprintf("%.0f us", med(pa, n)),
			    sprintf("off %.0f us", med(pb, n)), pct(s), n)
			if (c == "sched")
				row(4, "sched events lost / captured", w, cname,
				    sprintf("%.4f", sev[w, c] + slost[w, c] ? slost[w, c] / (sev[w, c] + slost[w, c]) : 0),
				    slost[w, c] " lost", sev[w, c] " captured", "-", n)
			else
				row(4, "app events lost / recorded", w, cname,
				    sprintf("%.4f", aev[w, c] + alost[w, c] ? alost[w, c] / (aev[w, c] + alost[w, c]) : 0),
				    alost[w, c] " lost", aev[w, c] " recorded", "-", n)
		}
	}
	# ---- part 5: bytes
	for (i = 1; i <= nw; i++) {
		w = wh[i]
		for (ci = 1; ci <= 2; ci++) {
			k = ci == 1 ? "app" : "sched"
			if (!((w, k) in b5)) continue
			$0 = b5[w, k]; kv()
			kn = k == "sched" ? "sched:" (v["backend"] == "dial9.ko" ? "ko" : v["backend"]) : "app"
			raw = v["events"] ? v["bytes"] / v["events"] : 0
			lz = v["events"] ? v["lz4_out"] / v["events"] : 0
			base = k == "app" ? 24 : 48
			row(5, "bytes/event raw (" v["events"] " ev)", w, kn, x(raw / base), sprintf("%.2f B", raw),
			    k == "app" ? "24 B raw record" : "48 B dial9.ko record", "-", 1)
			row(5, "bytes/event after LZ4", w, kn, x(v["lz4_in"] ? v["lz4_out"] / v["lz4_in"] : 0),
			    sprintf("%.2f B", lz), sprintf("raw %.2f B", raw), "-", 1)
		}
	}
	# ---- part 5: the flush thread (the part-4 runs), memory
	for (i = 1; i <= nw; i++) {
		w = wh[i]; n = reps[w]
		for (ci = 1; ci <= 2; ci++) {
			c = ci == 1 ? "app" : "sched"
			cname = c == "sched" ? "sched:" (sched[w] == "dial9.ko" ? "ko" : sched[w]) : c
			split("", rate); split("", need); split("", share); split("", hr)
			for (r = 1; r <= n; r++) {
				cpu = fcpu[w, c, r] / 1e9
				rate[r] = cpu > 0 ? fbytes[w, c, r] / cpu / 1e6 : 0
				need[r] = fbytes[w, c, r] / fsecs[w, c, r] / 1e6
				share[r] = cpu / fsecs[w, c, r]
				hr[r] = need[r] ? rate[r] / need[r] : 0
			}
			row(5, "flush MB/s per flush CPU-s", w, cname, x(med(hr, n)), sprintf("%.1f MB/s", med(rate, n)),
			    sprintf("produced %.2f MB/s", med(need, n)), pct(spread(hr, n)), n)
			row(5, "flush thread CPU / wall", w, cname, sprintf("%.4f", med(share, n)),
			    sprintf("%.1f ms/s", 1000 * med(share, n)),
			    (w, c) in idle ? sprintf("idle %.1f ms/s", 1000 * idle[w, c]) : "-", pct(spread(share, n)), n)
		}
		if (!(w in mreps)) continue
		n = mreps[w]
		for (ci = 1; ci <= 2; ci++) {
			c = ci == 1 ? "app" : "sched"
			split("", d)
			for (r = 1; r <= n; r++) d[r] = (mem[w, c, r] - mem[w, "off", r]) / memthr[w]
			m = med(d, n)
			row(5, "RSS per recording thread", w, c == "sched" ? cname : c, x(m / buf[w]), mib(m),
			    "buffer " mib(buf[w]), pct(spread(d, n)), n)
		}
	}
}'
