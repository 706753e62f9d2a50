// SPDX-License-Identifier: MIT
/*
 * check_sched.js DIR - `dial9 sched --json` of the traces of
 * `mktrace sched` (DIR/CASE.json): whole waits from the scheduler's
 * totals, unknown waits and states across losses, exact totals after
 * lost switch-ins, threads of two hosts kept apart, and the waits a perf
 * recording measured or could not.  The expected figures follow from the
 * events mktrace.c writes, by the rules of docs/cli.md, not from the
 * tool's output.
 */
"use strict";
const fs = require("fs");

const dir = process.argv[2];
let failed = 0;

function check(ok, what) {
  console.log((ok ? "ok     " : "FAILED ") + what);
  if (!ok) failed = 1;
}

function load(name) {
  return JSON.parse(fs.readFileSync(`${dir}/${name}.json`, "utf8"));
}

function thread(j, tid, host) {
  return j.threads.find((t) => t.tid === tid && (!host || t.host === host));
}

/* (a) out at total 1000 count 5, in at total 4000 count 5 after 500 ns here */
{
  const j = load("migrated");
  const a = thread(j, 201), n = thread(j, 202), s = thread(j, 203);

  check(a.delay.count === 1 && a.delay.max_ns === 3500,
        "migrated wait: whole, 3000 ns elsewhere + 500 ns here = 3500 ns");
  check(a.runq_total_ns === 3500 && a.waits === 1 && a.unknown_delays === 0,
        "migrated wait: total 3500 ns in 1 wait");
  check(a.runnable_ns === 3500 && a.blocked_ns === 10000 - 3500,
        "migrated wait: blocked until the whole wait began");
  /* new thread: 700 ns to its first run, then 1000 - 700 + 200 */
  check(n.delay.count === 2 && n.delay.max_ns === 700 &&
        n.delay.sum_ns === 1200, "new thread: both waits exact (700, 500)");
  check(n.runq_total_ns === 1200 && n.waits === 2,
        "new thread: total 1200 ns in 2 waits, from its creation");
  check(n.runq_total_ns === n.delay.sum_ns && n.waits === n.delay.count,
        "nothing unknown: the total is the sum of the waits");
  /* first seen at a switch-in with 7 runs behind: start unseen */
  check(s.delay.count === 0 && s.unknown_delays === 1,
        "wait begun before the trace: unknown, not measured");
  check(s.runq_total_ns === 400 && s.waits === 1,
        "wait begun before the trace: its last 400 ns count in the total");
  check(j.lost === 0 && j.loss_windows.length === 0, "no losses reported");
}

/* (b) no totals: CPU 1 lost records in [120, 150] us during 301's wait */
{
  const j = load("lost");
  const t = thread(j, 301);
  const T0 = 1000000000000;

  check(j.lost === 5 && j.lost_by_cpu.length === 1 &&
        j.lost_by_cpu[0].cpu === 1 && j.lost_by_cpu[0].records === 5,
        "5 scheduler records lost on CPU 1");
  check(j.loss_windows.length === 1 &&
        j.loss_windows[0].from_ns === T0 + 120000 &&
        j.loss_windows[0].to_ns === T0 + 150000,
        "its window: from CPU 1's last event to the LOST record");
  check(t.unknown_delays === 1 && t.delay.count === 1 &&
        t.delay.max_ns === 10000,
        "the wait across the loss is unknown, not 30 us");
  check(t.unknown_ns === 50000 && t.blocked_ns === 20000 &&
        t.runnable_ns === 30000,
        "state: blocked 100-120, unknown 120-170, runnable 170-200 us");
}

/* (c) totals: three switch-ins lost (count 5 -> 8) */
{
  const j = load("lostin");
  const t = thread(j, 401);

  check(t.unknown_delays === 1 && t.delay.count === 0,
        "lost switch-ins: the wait is unknown");
  check(t.runq_total_ns === 9500 - 1000 && t.waits === 9 - 5,
        "lost switch-ins: the total (8500 ns) and count (4) stay exact");
  check(t.unknown_ns > 0 && t.on_cpu_ns === 10000,
        "lost switch-ins: the time between is unknown, the last run known");
  check(j.unfollowed.length === 1 && j.unfollowed[0].pid === 777 &&
        j.unfollowed[0].parent_pid === 400, "the unfollowed child is reported");
}

/* (d) tid 500 on hosts alpha (two segments) and beta */
{
  const j = load("hosts");
  const all = j.threads.filter((t) => t.tid === 500);
  const a = thread(j, 500, "alpha"), b = thread(j, 500, "beta");

  check(all.length === 2 && a && b, "two hosts, one tid: two threads");
  check(a.switches === 2 && a.delay.count === 2 && a.runq_total_ns === 5000,
        "alpha's two segments are one thread (1000 + 4000 ns)");
  check(b.switches === 1 && b.runq_total_ns === 2000, "beta's thread alone");
}

/* (e) perf: waits measured from the waking or the preemption, or not */
{
  const j = load("perf");
  const t = thread(j, 601);

  check(t.delay.count === 2 && t.delay.sum_ns === 10000 &&
        t.delay.max_ns === 5000, "perf: the two measured waits (5 + 5 us)");
  check(t.unknown_delays === 2,
        "perf: first sight and a wake-up nobody saw: unknown, not 0");
  check(t.runq_total_ns === 10000 && t.waits === 2,
        "perf: the total is the measured waits");
  check(t.blocked_ns === 15000 + 30000 && t.runnable_ns === 10000,
        "perf: blocked until the measured wait, all of it when unmeasured");
}

/* culprits/: who had CPU 0 during each wait (mktrace.c says when) */
{
  const j = load("culprits");
  const c = (tid) => thread(j, tid).culprits.map(
    (x) => `${x.name}:${x.tid}:${x.ns}:${x.count}`).join(" ");

  check(c(501) === "?:502:20000:1 (idle):null:10000:1 ?:503:5000:1 " +
        "(other processes):null:5000:1",
        "culprits of a preempted thread: the thread that ran, the idle " +
        "task, another thread, other processes, largest first");
  check(c(502) === "(idle or other processes):null:5000:1 ?:501:1000:1",
        "culprits: a gap between the idle task and another process, and " +
        "the first wait of a new thread");
  check(c(503) === "(idle):null:2000:1", "culprits: an idle CPU");
  check(c(901) === "?:601:4000:1 (idle):null:2000:1",
        "culprits: a migrated wait, on the CPU it came from, then the one it ran on");
  check(thread(j, 501).runq_total_ns === 40000,
        "culprits: their time adds up to the wait");
  check(!("culprits" in thread(load("migrated"), 201)),
        "no culprits without --culprits");
}

/* occupants/: every switch of a CPU while a recorded thread waits */
{
  const j = load("occupants");
  const c = (tid) => thread(j, tid).culprits.map(
    (x) => `${x.name}:${x.tid}:${x.pid}:${x.ns}`).join(" ");

  check(c(801) === "hog-a:2001:2000:10000 other:3001:3001:7000 " +
        "hog-b:2002:2000:5000 (idle):null:null:3000",
        "occupants: each foreign task by name and pid, the idle task");
  check(c(802) === "(other processes):null:null:18000 (idle):null:null:2000",
        "occupants: redacted foreign tasks are one, with their time");
  check(c(803) === "?:4002:4002:10000 ?:4001:4001:5000",
        "occupants: a gap that began before the wait is its end's task");
  check(j.occupants === true, "occupants: the JSON says so");
  check(j.threads.every((t) => t.tid >= 801 && t.tid <= 803),
        "occupants: foreign tasks are no threads of the recording");
  const e = load("occupants-explain").delays.find((d) => d.tid === 801);
  check(e && e.ran.map((x) => `${x.name}:${x.prio}`).join(" ") ===
        "hog-a:120 hog-b:130 (idle):null other:110",
        "occupants: --explain gives what ran its prio");
  check(load("culprits").occupants === false,
        "no occupants in a trace without sched.occupants");
}

/* --explain --min-delay 2 on culprits/: the three waits of 2 us or more */
{
  const d = load("explain").delays;
  const by = (tid) => d.filter((x) => x.tid === tid);
  const ran = (x) => x.ran.map((r) => `${r.name}:${r.tid}:${r.ns}`).join(" ");

  check(d.length === 4 && !d.some((x) => x.wait_ns < 2000),
        "explain: every delay of 2 us or more, none shorter");
  const m = by(901)[0];
  check(m && m.cause === "new" && m.cpu === 0 && m.wait_ns === 6000 &&
        ran(m) === "?:601:4000 (idle):null:2000" && m.idle_elsewhere_ns === 4000,
        "explain: a migrated wait over both CPUs, each part behind what ran there");
  const a = by(501)[0], b = by(502)[0], c = by(503)[0];
  check(a && a.cause === "preempted" && a.cpu === 0 && a.wait_ns === 40000 &&
        a.at_ns === a.end_ns - 40000 && a.waker === null &&
        ran(a) === "?:502:20000 (idle):null:10000 ?:503:5000 (other processes):null:5000" &&
        a.idle_elsewhere_ns === 0,
        "explain: a preemption, what ran meanwhile in order, no other CPU idle");
  check(b && b.cause === "woken" && b.waker && b.waker.tid === 601 &&
        b.waker.pid === 601 && b.wait_ns === 5000 &&
        ran(b) === "(idle or other processes):null:5000" &&
        b.idle_elsewhere_ns === 5000,
        "explain: a wake-up with its waker, and another CPU idle throughout");
  check(c && c.cause === "new" && c.wait_ns === 2000 &&
        ran(c) === "(idle):null:2000", "explain: a new thread's first wait");
  check(load("explain-1ms").delays.length === 0,
        "explain: 1 ms by default, and none is that long here");
}

process.exit(failed);
