// SPDX-License-Identifier: MIT
/*
 * check_utc.js - the wall clock beside the trace's monotonic time, in the
 * text outputs of a real recording (make test-tools).
 *
 *   node check_utc.js DUMP.jsonl INFO.txt EXPLAIN.txt LIVE.txt
 *
 * DUMP.jsonl (dial9 dump --sorted) gives the trace's offset, UTC minus
 * CLOCK_MONOTONIC, from its first line.  Every time shown with a UTC
 * beside it must give the same offset (within 2 us: both are printed
 * to the microsecond):
 *  - dial9 info: "first N ns  (UTC)", "last N ns  (UTC)";
 *  - dial9 sched --explain: "... from S s (UTC) on CPU ...", and the
 *    report's "max delay of ... at S s (UTC)";
 *  - dial9 sched --live: each delay line "time_s UTC comm ...", time_s
 *    from its start: one offset for every line, and its report's "max
 *    delay" lines against this host's clocks (CLOCK_MONOTONIC is
 *    process.hrtime here), within 1 s.
 */
"use strict";
const fs = require("fs");

const [dumpPath, infoPath, explainPath, livePath] = process.argv.slice(2);
const failures = [];
function check(ok, what) {
  console.log((ok ? "ok     " : "FAILED ") + what);
  if (!ok) failures.push(what);
}

const UTC = /(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)\.(\d{6})Z/;
/* UTC to ns since the epoch, exactly (BigInt) */
function utcNs(s) {
  const m = UTC.exec(s);
  if (!m) return null;
  return BigInt(Date.parse(m[1] + "Z")) * 1000000n + BigInt(m[2]) * 1000n;
}
/* "1000.000065" seconds to ns, exactly */
function secNs(s) {
  const [i, f = ""] = s.split(".");
  return BigInt(i) * 1000000000n + BigInt((f + "000000000").slice(0, 9));
}
const abs = (x) => (x < 0n ? -x : x);
const US2 = 2000n;

const first = JSON.parse(fs.readFileSync(dumpPath, "utf8").split("\n")[0]);
const offset = utcNs(first.utc) - BigInt(first.ts);
console.log(`trace offset (UTC - CLOCK_MONOTONIC): ${offset} ns, from ${first.utc}`);

/* lines of TEXT matching RE ([1]: monotonic, [2]: UTC), as offsets */
function offsets(text, re, toNs) {
  return text.split("\n").map((l) => re.exec(l)).filter(Boolean)
    .map((m) => utcNs(m[2]) - toNs(m[1]));
}

const info = fs.readFileSync(infoPath, "utf8");
const inf = offsets(info, /^ {2}(?:first|last) +(\d+) ns +\((\S+)\)$/, BigInt);
check(inf.length === 2 && inf.every((o) => abs(o - offset) <= US2),
      `info: first and last with their UTC (${inf.length} of 2 at the trace's offset)`);

const explain = fs.readFileSync(explainPath, "utf8");
const ex = offsets(explain, / from (\d+\.\d+) s \((\S+)\) on CPU /, secNs);
const mx = offsets(explain, /^max delay of .* at (\d+\.\d+) s \((\S+)\)$/, secNs);
check(ex.length > 0 && ex.every((o) => abs(o - offset) <= US2),
      `sched --explain: ${ex.length} delays, each with its UTC at the trace's offset`);
check(mx.length > 0 && mx.every((o) => abs(o - offset) <= US2),
      `sched: ${mx.length} "max delay" lines, each with its UTC at the trace's offset`);

const live = fs.readFileSync(livePath, "utf8");
const lv = offsets(live, /^ *(\d+\.\d+) (\S+Z) \S.* us$/, secNs);
const lv0 = lv[0];
check(live.split("\n")[0].includes(" utc ") && lv.length > 0 &&
      lv.every((o) => abs(o - lv0) <= US2),
      `sched --live: ${lv.length} delay lines, each with a UTC, one offset from time_s`);
/* this host's UTC - CLOCK_MONOTONIC, as the trace's would be */
const host = BigInt(Date.now()) * 1000000n - process.hrtime.bigint();
const lm = offsets(live, /^max delay of .* at (\d+\.\d+) s \((\S+)\)$/, secNs);
check(lm.length > 0 && lm.every((o) => abs(o - host) < 1000000000n),
      `sched --live: ${lm.length} "max delay" lines with UTC, at this host's offset`);

if (failures.length) {
  console.log(`${failures.length} UTC checks failed`);
  process.exit(1);
}
console.log("UTC checks passed");
