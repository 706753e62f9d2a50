// SPDX-License-Identifier: MIT
/*
 * check_perf.js - what recorded.sh's perf recordings must show, against
 * the kernel's own accounting (/proc/PID/schedstat, /proc/PID/sched).
 *
 *   node check_perf.js exit KERNEL_RUN_NS NAME SCHED.json REPORT.html
 *                      EXPORT.json SUMMARIES.jsonl DUMP.jsonl
 *     A thread NAME that exited while its process's recording went on:
 *     its on-CPU time is the kernel's (KERNEL_RUN_NS, read by the thread
 *     itself just before it exited) and its time ends at its exit
 *     (sched.exit in the dump), not at the end of the trace, in `dial9
 *     sched --json`, in the HTML report's data (its totals and its bars),
 *     in `dial9 export --perfetto` (its state slices) and in the segment
 *     summaries (its row).
 *
 *   node check_perf.js runq VALUES SCHED.json EXPLAIN.json DUMP.jsonl
 *     Threads sharing a CPU with a hog: each one's runqueue total, wait
 *     count and migrations against the kernel's, from VALUES (lines
 *     written by recorded.sh; "NaN" where /proc/PID/sched is missing):
 *       w TID D0 C0 M0 D1 C1 M1    alive, stopped at both ends of the
 *                                  recording: exact
 *       x TID D0 C0 M0 DZ CZ MZ RS DS CS MS
 *                                  exited during the recording and left
 *                                  a zombie until its end: DZ.. its
 *                                  totals as a zombie, RS.. what it
 *                                  read of itself just before exiting
 *       y TID RS DS CS MS          born during the recording, exited,
 *                                  reaped at once by its parent; RS..
 *                                  what it read of itself (since birth)
 *       nice TID PRIO              its prio (nice -n 5: 125)
 *     (D run_delay, C pcount, M se.nr_migrations, R sum_exec_runtime).
 *     And `dial9 sched --explain --json`: every delay of a recorded
 *     thread during which the nice'd one ran shows it with PRIO, the
 *     others with 120.
 *
 *   node check_perf.js prio PRIO EXPLAIN.json
 *     Every recorded thread that ran during another's delay is shown
 *     with PRIO (a command run under nice).
 */
"use strict";
const fs = require("fs");

const [mode, ...args] = process.argv.slice(2);
let failed = 0;

function check(ok, what) {
  console.log((ok ? "ok     " : "FAILED ") + what);
  if (!ok) failed = 1;
}
const json = (f) => JSON.parse(fs.readFileSync(f, "utf8"));
const lines = (f) => fs.readFileSync(f, "utf8").split("\n").filter((l) => l.trim());
const ms = (ns) => (ns / 1e6).toFixed(3) + " ms";

if (mode === "exit") {
  const [kArg, name, schedF, reportF, exportF, sumF, dumpF] = args;
  const k = Number(kArg);
  /* The kernel's figure was read before the exit, which still runs on
   * CPU (and a recording does not end a switch exactly at its record). */
  const near = (d) => d >= k - 1e6 && d <= k + 5e6 + 0.1 * k;
  const say = `kernel ${ms(k)}`;

  const sched = json(schedF).threads.filter((t) => t.name === name);
  check(sched.length === 1, `sched: one ${name} thread (got ${sched.length})`);
  if (!sched.length) process.exit(1);
  const tid = sched[0].tid;
  const dump = lines(dumpF).map((l) => JSON.parse(l));
  const exits = dump.filter((e) => e.name === "sched.exit" && e.fields.tid === tid);
  check(exits.length === 1, `dump: one sched.exit of ${name} ${tid} (got ${exits.length})`);
  if (exits.length !== 1) process.exit(1);
  const exit = exits[0].ts, end = dump[dump.length - 1].ts;
  /* what makes the rest tell an end at the exit from one at the end */
  check(end - exit >= 200e6,
        `the trace goes on ${ms(end - exit)} after ${name}'s exit (at least 200 ms)`);

  const s = sched[0];
  check(near(s.on_cpu_ns), `sched: on CPU ${ms(s.on_cpu_ns)}, ${say}`);

  /* the report: the page's data (<script id="dial9-data">), as its
   * script reads it; times in ns from start_ns, st: [start, dur, state] */
  const page = fs.readFileSync(reportF, "utf8");
  const m = /<script type="application\/json" id="dial9-data">([\s\S]*?)<\/script>/.exec(page);
  check(!!m, "report: the page holds its data");
  const D = m ? JSON.parse(m[1]) : { threads: [] };
  const rt = D.threads.filter((t) => t.tid === tid);
  check(rt.length === 1, `report: one thread ${tid} (got ${rt.length})`);
  if (rt.length === 1) {
    const st = [];
    for (let i = 0; i + 2 < rt[0].st.length; i += 3) st.push(rt[0].st.slice(i, i + 3));
    const start0 = Number(D.start_ns);
    const run = st.filter((x) => x[2] === 1).reduce((a, x) => a + x[1], 0);
    const last = st.length ? start0 + st[st.length - 1][0] + st[st.length - 1][1] : 0;
    check(near(rt[0].s.on), `report: its totals' on CPU ${ms(rt[0].s.on)}, ${say}`);
    check(near(run), `report: its running bars ${ms(run)}, ${say}`);
    check(st.length > 0 && last === exit,
          `report: its last bar ends at its exit (${last - start0} ns from the start, exit at ${exit - start0}, trace ${D.dur})`);
  }

  /* the export: its state slices (us, to the ns; "wakeup" is a flow's
   * start, of dur 0: its exit wakes its parent, after its exit record) */
  const ev = json(exportF).traceEvents.filter(
    (e) => e.ph === "X" && e.tid === tid && e.cat === "sched" && e.name !== "wakeup");
  const run = ev.filter((e) => e.name === "running").reduce((a, e) => a + e.dur * 1e3, 0);
  const last = ev.reduce((a, e) => Math.max(a, e.ts + e.dur), 0);
  check(near(run), `export: its running slices ${ms(run)}, ${say}`);
  check(ev.length > 0 && Math.abs(last * 1e3 - exit) < 1,
        `export: its last state slice ends at its exit (${(last * 1e3 - exit).toFixed(0)} ns from it)`);

  /* the summaries: its row (one segment) */
  const rows = lines(sumF).map((l) => JSON.parse(l)).filter((r) => r.tid === tid);
  check(rows.length === 1, `summaries: one row of ${tid} (got ${rows.length})`);
  if (rows.length === 1) {
    const r = rows[0];
    const acc = r.on_cpu_ns + r.runnable_ns + r.blocked_ns + r.unknown_ns;
    check(near(r.on_cpu_ns), `summaries: on CPU ${ms(r.on_cpu_ns)}, ${say}`);
    check(r.window_end_mono_ns - exit >= 200e6 && acc <= exit - r.window_start_mono_ns,
          `summaries: its time (${ms(acc)}) ends by its exit, ${ms(exit - r.window_start_mono_ns)} into a window of ${ms(r.window_end_mono_ns - r.window_start_mono_ns)}`);
  }
} else if (mode === "runq") {
  const [valF, schedF, explainF, dumpF] = args;
  const th = json(schedF).threads;
  const val = {};
  for (const l of lines(valF)) {
    const [k, ...v] = l.trim().split(/\s+/);
    (val[k] = val[k] || []).push(v.map(Number));
  }
  const find = (tid) => {
    const t = th.filter((x) => x.tid === tid);
    check(t.length === 1, `the trace has thread ${tid} once (got ${t.length})`);
    return t[0];
  };
  const fig = (x) => `${x.runq_total_ns} ns in ${x.waits} waits (${x.delay.count} known, ${x.unknown_delays} of unknown length), ${x.migrations} migrations, totals ${x.totals}`;

  /* alive, stopped when the recorder and this test read the kernel's
   * totals (at its start and at its end): no wait between the reads,
   * so they are exact */
  for (const [tid, d0, c0, m0, d1, c1, m1] of val.w || []) {
    const x = find(tid);
    if (!x) continue;
    console.log(`worker ${tid}: dial9 ${fig(x)}; kernel ${d1 - d0} ns in ${c1 - c0}, ${m1 - m0} migrations`);
    check(x.totals && x.runq_total_ns === d1 - d0 && x.waits === c1 - c0,
          `worker ${tid}: the kernel's runqueue total and wait count`);
    check(Number.isNaN(m0) || Number.isNaN(m1) || x.migrations === m1 - m0,
          `worker ${tid}: the kernel's migrations` +
          (Number.isNaN(m0) || Number.isNaN(m1) ? " (not known here: no /proc/PID/sched)" : ""));
  }
  check((val.w || []).length >= 3, `at least 3 workers (got ${(val.w || []).length})`);

  /*
   * Exited, left a zombie: the recorder reads its schedstat when it
   * handles its exit record (ksched_perf_read.c, resolve()), after the
   * thread read its own (RS..) and no later than its death (DZ..: the
   * zombie's, frozen).  Between the two it wrote one line to an open
   * file and exited: at most 2 more runs (a preemption by the hog, a
   * block in the write), and its run_delay grows only with them (it is
   * pinned: no wait ends elsewhere).
   */
  for (const [tid, d0, c0, m0, dz, cz, mz, , ds, cs, ms_] of val.x || []) {
    const x = find(tid);
    if (!x) continue;
    console.log(`exited ${tid}: dial9 ${fig(x)}; kernel before its exit ${ds - d0} ns in ${cs - c0}, ${ms_ - m0} migrations; at its death ${dz - d0} ns in ${cz - c0}, ${mz - m0} migrations`);
    check(x.totals, `exited ${tid}: totals from the kernel (its schedstat at its exit record)`);
    check(x.waits >= cs - c0 && x.waits <= cz - c0 && cz - cs <= 2,
          `exited ${tid}: wait count between what it read before exiting and its death, at most 2 apart`);
    check(x.runq_total_ns >= ds - d0 && x.runq_total_ns <= dz - d0 &&
          (x.waits !== cs - c0 || x.runq_total_ns === ds - d0) &&
          (x.waits !== cz - c0 || x.runq_total_ns === dz - d0),
          `exited ${tid}: runqueue total between the two, and equal to the one with the same wait count`);
    if (!Number.isNaN(m0) && !Number.isNaN(ms_))
      check(x.migrations === ms_ - m0 && mz === ms_ && ms_ - m0 >= 2,
            `exited ${tid}: the kernel's migrations (it moved itself to CPU 1 and back)`);
  }
  check((val.x || []).length === 1, "one worker that exits, left a zombie");

  /*
   * Exited and reaped at once: gone when the recorder handles its exit
   * record, which then has no schedstat of it (as for any thread of a
   * process: the kernel reaps those as they exit).  Its figures are the
   * waits perf saw: the total is the known waits' sum, the count theirs,
   * and known and unknown together are its switch-ins in the trace.
   * Born while recorded, it has all its runs up to its exit record in
   * the trace (a switch-in, or where the kernel wrote none, a switch-out
   * with none before it: perf writes no switch record while some tasks
   * run, e.g. a VM's PID 1 agent here), at least those it had counted
   * itself and at most 2 more (as above).  Should the recorder win the
   * race and read it before its parent reaps it: the exited zombie's
   * rule.
   */
  const dump = dumpF ? lines(dumpF).map((l) => JSON.parse(l)) : [];
  for (const [tid, , ds, cs, ms_] of val.y || []) {
    const x = find(tid);
    if (!x) continue;
    const seen = x.delay.count + x.unknown_delays;
    let ins = 0, bare = 0, last = "";
    for (const e of dump) {
      if (!e.fields || e.fields.tid !== tid) continue;
      if (e.name === "sched.switch_in") ins++;
      else if (e.name === "sched.switch_out" && last !== "sched.switch_in") bare++;
      else if (e.name !== "sched.switch_out") continue;
      last = e.name;
    }
    console.log(`reaped ${tid}: dial9 ${fig(x)}; its trace ${ins} switch-ins and ${bare} switch-outs without one; kernel before its exit ${ds} ns in ${cs}, ${ms_} migrations`);
    if (x.totals) {
      check(x.waits >= cs && x.waits <= cs + 2 && x.runq_total_ns >= ds &&
            (x.waits !== cs || x.runq_total_ns === ds),
            `reaped ${tid}, read before reaped: the kernel's totals at its exit`);
    } else {
      check(x.runq_total_ns === x.delay.sum_ns && x.waits === x.delay.count,
            `reaped ${tid}: its total and count are those of its known waits`);
      check(seen === ins, `reaped ${tid}: known and unknown waits are its switch-ins in the trace (${seen}, ${ins})`);
      check(ins + bare >= cs && ins + bare <= cs + 2,
            `reaped ${tid}: the trace has its runs (${ins + bare}; it counted ${cs} before exiting)`);
    }
  }
  check((val.y || []).length === 1, "one worker that exits, reaped at once");

  /* prio: what ran during each delay of a recorded thread */
  for (const [tid, prio] of val.nice || []) {
    const ex = json(explainF);
    const workers = new Set((val.w || []).map((w) => w[0]));
    const ran = ex.delays.flatMap((d) => d.ran).filter((r) => workers.has(r.tid));
    const niced = ran.filter((r) => r.tid === tid), others = ran.filter((r) => r.tid !== tid);
    const prios = (v) => [...new Set(v.map((r) => r.prio))].join(",");
    console.log(`prio: ${tid} ran in ${niced.length} delays with prio ${prios(niced)}, the other workers in ${others.length} with ${prios(others)}`);
    check(niced.length > 0 && niced.every((r) => r.prio === prio),
          `nice -n 5 worker ${tid}: prio ${prio} wherever it ran meanwhile`);
    check(others.length > 0 && others.every((r) => r.prio === 120),
          "the other workers: prio 120");
  }
  check((val.nice || []).length === 1, "one worker under nice");
} else if (mode === "prio") {
  const [prioArg, explainF] = args;
  const prio = Number(prioArg);
  const ex = json(explainF);
  const ours = new Set(ex.threads.map((t) => t.tid));
  const ran = ex.delays.flatMap((d) => d.ran).filter((r) => ours.has(r.tid));
  const got = [...new Set(ran.map((r) => r.prio))].join(",");
  console.log(`prio: recorded threads ran in ${ran.length} delays of others, with prio ${got}`);
  check(ran.length > 0 && ran.every((r) => r.prio === prio),
        `every recorded thread is shown with prio ${prio} (got ${got})`);
} else {
  console.log("usage: check_perf.js exit|runq|prio ...");
  process.exit(2);
}
process.exit(failed);
