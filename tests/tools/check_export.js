// SPDX-License-Identifier: MIT
/*
 * check_export.js - parse `dial9 export --perfetto` output and check it.
 *
 *   node check_export.js synth TRACE.json    exact content of mktrace synth
 *   node check_export.js record TRACE.json   a real perf recording (ping/pong)
 *
 * Both modes check structure: the file parses as JSON; every event has
 * ph, pid, tid and a numeric ts; X slices on one thread nest properly
 * (what Perfetto and chrome://tracing need to draw them on one track);
 * every flow_out bind_id has exactly one flow_in, not earlier, on another
 * thread; running/runnable/blocked slices of a thread never overlap.
 */
"use strict";
const fs = require("fs");

const [mode, file] = process.argv.slice(2);
const doc = JSON.parse(fs.readFileSync(file, "utf8"));
const evs = doc.traceEvents;
const failures = [];
function check(ok, what) {
  console.log((ok ? "ok     " : "FAILED ") + what);
  if (!ok) failures.push(what);
}
const eq = (a, b) => JSON.stringify(a) === JSON.stringify(b);

/* ---- structure, any trace ---- */
check(Array.isArray(evs) && evs.length > 0, "traceEvents is a non-empty array");
check(evs.every((e) => typeof e.ph === "string" && Number.isInteger(e.pid) &&
                       Number.isInteger(e.tid) && typeof e.ts === "number"),
      "every event has ph, pid, tid and a numeric ts");
const X = evs.filter((e) => e.ph === "X");
check(X.every((e) => typeof e.dur === "number" && e.dur >= 0), "X slices have dur >= 0");
const byTid = {};
for (const e of X) (byTid[e.tid] = byTid[e.tid] || []).push(e);
let nestOk = true, overlapOk = true;
// Half a nanosecond (ts and dur are microseconds with 3 decimals: exact
// ns): far above the rounding of doubles at 1.7e10 us (~4e-6), which a
// tolerance of 1e-6 did not cover.
const EPS = 5e-4;
for (const tid in byTid) {
  const v = byTid[tid].slice().sort((a, b) => a.ts - b.ts || b.dur - a.dur);
  const stack = [];
  for (const e of v) {
    while (stack.length && stack[stack.length - 1].ts + stack[stack.length - 1].dur <= e.ts + EPS &&
           !(stack[stack.length - 1].dur > 0 && e.dur === 0 &&
             stack[stack.length - 1].ts + stack[stack.length - 1].dur > e.ts + EPS))
      stack.pop();
    const top = stack[stack.length - 1];
    if (top && e.ts + e.dur > top.ts + top.dur + EPS) {
      nestOk = false;
      console.log("  not nested on " + tid + ": " + JSON.stringify(e) + " in " + JSON.stringify(top));
    }
    stack.push(e);
  }
  const states = v.filter((e) => e.cat === "sched" && e.name !== "wakeup");
  for (let i = 1; i < states.length; i++)
    if (states[i].ts < states[i - 1].ts + states[i - 1].dur - EPS) overlapOk = false;
}
check(nestOk, "X slices nest properly on every thread");
check(overlapOk, "state slices of a thread never overlap");
const outs = X.filter((e) => e.flow_out), ins = X.filter((e) => e.flow_in);
const flowsOk = outs.every((o) => {
  const m = ins.filter((i) => i.bind_id === o.bind_id);
  return m.length === 1 && m[0].ts >= o.ts && m[0].tid !== o.tid && m[0].name === "running";
}) && ins.length === outs.length;
check(flowsOk, `each of ${outs.length} wake-up flows ends at exactly one running slice of another thread`);

const names = {};
for (const e of evs)
  if (e.ph === "M" && e.name === "thread_name") names[e.tid] = e.args.name;
const count = (f) => evs.filter(f).length;

if (mode === "synth") {
  /* see tests/tools/mktrace.c; times are 1e9 us + offset */
  const T = (us) => 1e9 + us;
  check(eq(names, { 101: "worker-a", 102: "worker-b" }),
        "thread names: the stream's name beats comm, comm where there is no other");
  check(count((e) => e.ph === "M" && e.name === "process_name" && e.pid === 100 &&
                     e.args.name === "synth") === 1, "process 100 is named synth");
  const st = (tid) => X.filter((e) => e.tid === tid && e.cat === "sched" && e.name !== "wakeup")
    .map((e) => [e.name[0] + e.name.slice(-2), e.ts - 1e9, e.dur]);
  /* worker-a: running 0-100 (cut at span bounds 50 and 80), blocked 100-160
   * and runnable 160-200 (switch-in with 40 us delay), running 200-300 (cut
   * at 250), blocked 300-320, runnable 320-400 (80 us; cut at 350),
   * running 400 to the trace end at 500 */
  check(eq(st(101), [["rng", 0, 50], ["rng", 50, 30], ["rng", 80, 20], ["bed", 100, 60],
                     ["rle", 160, 40], ["rng", 200, 50], ["rng", 250, 50], ["bed", 300, 20],
                     ["rle", 320, 30], ["rle", 350, 50], ["rng", 400, 100]]),
        "worker-a state slices exactly (got " + JSON.stringify(st(101)) + ")");
  check(eq(st(102), [["rle", 70, 30], ["rng", 100, 100], ["rle", 200, 10], ["rle", 210, 90],
                     ["rng", 300, 100], ["bed", 400, 100]]),
        "worker-b state slices exactly (got " + JSON.stringify(st(102)) + ")");
  const spans = X.filter((e) => e.cat === "span").map((e) => [e.tid, e.name, e.ts - 1e9, e.dur, e.args]);
  check(eq(spans, [
    [101, "request", 50, 300, { begin: { id: 7 }, end: { status: 200 } }],
    [101, "db.query", 80, 170, { begin: { table: "users<&>" }, end: { rows: 3 } }],
    [102, "flush", 210, 290, { begin: {}, end: {}, unfinished: true }]]),
        "spans paired and nested, the unfinished one cut at the trace end (got " + JSON.stringify(spans) + ")");
  check(outs.length === 1 && outs[0].tid === 102 && outs[0].ts === T(150) && outs[0].name === "wakeup" &&
        ins.length === 1 && ins[0].tid === 101 && ins[0].ts === T(200),
        "one flow: worker-b wakes worker-a at 150 us, to its switch-in at 200 us");
  const inst = evs.filter((e) => e.ph === "i");
  check(inst.length === 1 && inst[0].name === "checkpoint" && inst[0].tid === 101 &&
        inst[0].s === "t" && inst[0].ts === 1000000120.25,
        "one instant on worker-a at 120.25 us (fractional microseconds)");
  const C = evs.filter((e) => e.ph === "C").map((e) => [e.name, e.ts - 1e9, e.args]);
  check(eq(C, [["rx", 130, { bytes: 100 }], ["rx", 330, { bytes: 150 }],
               ["queue_depth", 500, { items: 7.5 }]]),
        "counter samples are running totals, the gauge its value (got " + JSON.stringify(C) + ")");
  check(X.length === 21 && evs.length === 3 + 21 + 1 + 3,
        `21 X slices and 28 events in all (got ${X.length}, ${evs.length})`);
  check(doc.otherData.files === 2 && doc.otherData.unmatched_span_ends === 0, "otherData");
  /* mktrace's clock sync: T0 is 2025-12-01T00:00:00Z */
  check(doc.otherData.first_event_ts_ns === 1e12 &&
        doc.otherData.first_event_utc === "2025-12-01T00:00:00.000000Z" &&
        eq(doc.otherData.clock_syncs, [{ host: null, boot_id: null, mono_ns: 1e12,
                                         utc: "2025-12-01T00:00:00.000000Z" }]),
        "otherData: the first event's UTC and the source's clock sync (got " +
        JSON.stringify(doc.otherData) + ")");
} else {
  /* mktrace record: threads ping and pong, 50 rounds in "round" spans */
  const tids = Object.keys(names).filter((t) => ["ping", "pong"].includes(names[t]));
  check(tids.length === 2, "threads ping and pong are named (got " + JSON.stringify(names) + ")");
  for (const t of tids) {
    const n = names[t];
    const rounds = X.filter((e) => e.tid === +t && e.name === "round");
    check(rounds.length === 50, `${n}: 50 round spans (got ${rounds.length})`);
    check(count((e) => e.tid === +t && e.name === "running") >= 25 &&
          count((e) => e.tid === +t && e.name === "blocked") >= 25,
          `${n}: running and blocked slices from the scheduler`);
  }
  check(count((e) => e.ph === "C" && e.name === "pongs") === 50, "50 samples of the pongs counter");
  const last = evs.filter((e) => e.ph === "C" && e.name === "pongs").pop();
  check(last && last.args.rounds === 50, "the counter's running total reaches 50");
  /* the export says where the scheduler records came from */
  const src = (doc.otherData.sched_sources || [])[0] || {};
  check(src.backend === "perf" && (src.note || "").length > 0,
        "otherData.sched_sources names the perf backend and why (got " +
        JSON.stringify(doc.otherData.sched_sources) + ")");
  console.log(`recorded trace: ${X.length} slices, ${outs.length} wake-up flows`);
}

if (failures.length) {
  console.log(failures.length + " check(s) failed");
  process.exit(1);
}
console.log("export checks passed (" + mode + ")");
