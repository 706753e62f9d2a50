#!/bin/sh
# The cost of the CPU profile (make bench-profile, in the VM under -icount,
# one vCPU): dial9-spin's time per call of hot() without the recorder
# (none), with it and no samples (hz0), at 99 Hz (hz99, the default) and
# at 999 Hz (hz999), from dial9.ko; then, with the module unloaded, from
# perf (perf-hz0, perf-hz99, perf-hz999).  REPS interleaved runs of ITERS
# calls.  Prints PROFBENCH lines, then the table (docs/benchmarks.md):
# the mean time per call, its ratio to none's, the spread of the runs
# (max - min over the mean) and the samples per run.
#   sh profile.sh ITERS REPS
n=${1:-2000}
reps=${2:-3}
run() {	# CFG REP ENV...
	cfg=$1 r=$2
	shift 2
	rm -rf /tmp/dial9-traces
	env "$@" dial9-spin -n "$n" >/tmp/out 2>/tmp/err
	echo "PROFBENCH cfg=$cfg rep=$r $(cat /tmp/out)" | tee -a /tmp/prof
	[ -s /tmp/err ] && sed 's/^/# /' /tmp/err | tail -n 3
}
: > /tmp/prof
for r in $(seq "$reps"); do
	run none "$r" DIAL9_ENABLED=0
	run hz0 "$r" DIAL9_ENABLED=1 DIAL9_CPU_SAMPLE_HZ=0
	run hz99 "$r" DIAL9_ENABLED=1 DIAL9_CPU_SAMPLE_HZ=99
	run hz999 "$r" DIAL9_ENABLED=1 DIAL9_CPU_SAMPLE_HZ=999
done
rmmod dial9 || echo "# rmmod dial9 failed: the perf rows are the module's"
for r in $(seq "$reps"); do
	run perf-hz0 "$r" DIAL9_ENABLED=1 DIAL9_CPU_SAMPLE_HZ=0
	run perf-hz99 "$r" DIAL9_ENABLED=1 DIAL9_CPU_SAMPLE_HZ=99
	run perf-hz999 "$r" DIAL9_ENABLED=1 DIAL9_CPU_SAMPLE_HZ=999
done
# the mean of each configuration, as a ratio to none's
awk '
	{ split("", f)
	  for (i = 1; i <= NF; i++) { split($i, kv, "="); f[kv[1]] = kv[2] }
	  c = f["cfg"]; v = f["ns_per_iter"] + 0
	  if (!(c in sum)) { order[++n] = c; lo[c] = hi[c] = v }
	  sum[c] += v; cnt[c]++; smp[c] += f["samples"]
	  if (v < lo[c]) lo[c] = v
	  if (v > hi[c]) hi[c] = v }
	END {
		base = sum["none"] / cnt["none"]
		printf "PROFTABLE %-10s %12s %7s %7s %9s\n", "config", "ns/iter", "ratio", "spread", "samples"
		for (i = 1; i <= n; i++) {
			c = order[i]; m = sum[c] / cnt[c]
			printf "PROFTABLE %-10s %12.1f %7.4f %6.2f%% %9.1f\n", c, m,
			       m / base, 100 * (hi[c] - lo[c]) / m, smp[c] / cnt[c]
		}
	}' /tmp/prof
