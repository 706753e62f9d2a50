// SPDX-License-Identifier: MIT
/*
 * report_browser.js - open a `dial9 report --html` page in Debian's
 * headless chromium and check it like a user would.
 *
 *   node report_browser.js REPORT.html SCREENSHOT.png EXPECT_JSON
 *
 * Chromium is driven over the DevTools protocol on a pipe
 * (--remote-debugging-pipe: commands on fd 3, replies on fd 4, each
 * message NUL-terminated), so no npm package and no downloaded browser
 * is needed.  Checked:
 *  - no console error or warning, no uncaught exception, no request
 *    other than the file itself (the page is self-contained);
 *  - one timeline track per expected thread, with the thread's name, and
 *    pixels drawn on every track canvas;
 *  - histogram rows and bars (EXPECT.histRows / EXPECT.histBars);
 *  - worst-delay rows (EXPECT.worst), the first naming EXPECT.firstWorst
 *    (thread, us, and with .utc its wall clock);
 *  - with EXPECT.utc, the wall clock beside trace time: the header's
 *    start UTC, and each worst delay's "at (UTC)" that start plus its
 *    "at (ms)" (to the microsecond);
 *  - each thread's culprits cell (EXPECT.culprits: {thread: text});
 *  - a real mouse click on a worst-delay row zooms the timeline so that
 *    the visible range holds that delay (switch-in minus delay to
 *    switch-in) and is much narrower than the trace, and marks the row
 *    and the thread's track as selected; the page's explanation of it
 *    (#why) says how long, on which CPU and how it began, what ran
 *    meanwhile (EXPECT.why: strings it holds), and the CPU's lane is
 *    shown on the timeline, named for that CPU, exactly when the data
 *    has an explanation of the delay;
 *  - a mouse wheel over a track zooms in.
 * Screenshots: SCREENSHOT (whole trace) and SCREENSHOT minus .png plus
 * -zoomed.png (after the click).
 */
"use strict";
const { spawn } = require("child_process");
const fs = require("fs");
const os = require("os");
const path = require("path");

const [page, shot, expectJson] = process.argv.slice(2);
const expect = JSON.parse(expectJson || "{}");
const CHROMIUM = process.env.CHROMIUM || "/usr/bin/chromium";
const failures = [];

function check(ok, what) {
  console.log((ok ? "ok     " : "FAILED ") + what);
  if (!ok) failures.push(what);
}

const profile = fs.mkdtempSync(path.join(os.tmpdir(), "dial9-chromium-"));
const chrome = spawn(CHROMIUM, [
  "--headless=new", "--no-sandbox", "--disable-gpu",
  "--disable-background-networking", "--disable-component-update",
  "--disable-sync", "--no-first-run", "--no-default-browser-check",
  "--disable-extensions", "--hide-scrollbars", "--mute-audio",
  "--user-data-dir=" + profile, "--remote-debugging-pipe",
  "--window-size=1400,1100", "about:blank",
], { stdio: ["ignore", "ignore", "pipe", "pipe", "pipe"] });
let chromeErr = "";
chrome.stderr.on("data", (d) => { chromeErr += d; });

const timer = setTimeout(() => {
  console.log("FAILED: timed out\n" + chromeErr.slice(-2000));
  chrome.kill("SIGKILL");
  process.exit(1);
}, 60000);

let nextId = 1, buf = "";
const waiting = new Map(), listeners = [];
chrome.stdio[4].on("data", (d) => {
  buf += d.toString("utf8");
  let i;
  while ((i = buf.indexOf("\0")) >= 0) {
    const msg = JSON.parse(buf.slice(0, i));
    buf = buf.slice(i + 1);
    if (msg.id && waiting.has(msg.id)) {
      const w = waiting.get(msg.id);
      waiting.delete(msg.id);
      if (msg.error) w.reject(new Error(w.method + ": " + msg.error.message));
      else w.resolve(msg.result);
    } else if (msg.method) {
      listeners.forEach((l) => l(msg));
    }
  }
});

function send(method, params, sessionId) {
  const id = nextId++;
  const m = { id, method, params: params || {} };
  if (sessionId) m.sessionId = sessionId;
  chrome.stdio[3].write(JSON.stringify(m) + "\0");
  return new Promise((resolve, reject) => waiting.set(id, { resolve, reject, method }));
}

function once(method) {
  return new Promise((resolve) => {
    const l = (m) => {
      if (m.method === method) {
        listeners.splice(listeners.indexOf(l), 1);
        resolve(m.params);
      }
    };
    listeners.push(l);
  });
}

async function main() {
  const url = "file://" + path.resolve(page);
  const problems = [], requests = [];
  listeners.push((m) => {
    const p = m.params || {};
    if (m.method === "Runtime.consoleAPICalled" &&
        ["error", "warning", "assert"].includes(p.type))
      problems.push("console." + p.type + ": " +
                    p.args.map((a) => a.value || a.description).join(" "));
    if (m.method === "Runtime.exceptionThrown")
      problems.push("exception: " + (p.exceptionDetails.exception || {}).description ||
                    p.exceptionDetails.text);
    if (m.method === "Log.entryAdded" && ["error", "warning"].includes(p.entry.level))
      problems.push("log " + p.entry.level + ": " + p.entry.text);
    if (m.method === "Network.requestWillBeSent") requests.push(p.request.url);
  });

  const targets = await send("Target.getTargets");
  const target = targets.targetInfos.find((t) => t.type === "page");
  const { sessionId: s } = await send("Target.attachToTarget",
                                      { targetId: target.targetId, flatten: true });
  for (const d of ["Page", "Runtime", "Log", "Network"]) await send(d + ".enable", {}, s);
  await send("Emulation.setDeviceMetricsOverride",
             { width: 1400, height: 1100, deviceScaleFactor: 1, mobile: false }, s);
  const loaded = once("Page.loadEventFired");
  await send("Page.navigate", { url }, s);
  await loaded;

  async function ev(expr) {
    const r = await send("Runtime.evaluate", {
      expression: "(async () => { " + expr + " })()",
      awaitPromise: true, returnByValue: true,
    }, s);
    if (r.exceptionDetails) throw new Error("evaluate: " + JSON.stringify(r.exceptionDetails));
    return r.result.value;
  }
  const frames = "await new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)));";
  await ev(frames);

  /* what rendered */
  const r = await ev(`
    const tracks = [...document.querySelectorAll("#timeline .track")];
    return {
      labels: tracks.map(t => t.querySelector(".track-label").textContent),
      inked: tracks.map(t => {
        const c = t.querySelector("canvas"), g = c.getContext("2d");
        const d = g.getImageData(0, 0, c.width, c.height).data;
        let n = 0;
        for (let i = 3; i < d.length; i += 4) if (d[i]) n++;
        return n;
      }),
      histRows: document.querySelectorAll("#hist .hist-row").length,
      histBars: document.querySelectorAll("#hist .hist-bar").length,
      worst: [...document.querySelectorAll("#worst tbody tr.worst-row")].map(
        tr => [...tr.children].map(td => td.textContent)),
      range: [+document.getElementById("range").dataset.start,
              +document.getElementById("range").dataset.end],
      dur: window.dial9.data.dur,
      startUtc: window.dial9.data.start_utc,
      summary: document.getElementById("summary").textContent,
      worstHead: [...document.querySelectorAll("#worst thead th")].map(th => th.textContent),
      threadRows: document.querySelectorAll("#threads tbody tr").length,
      culprits: Object.fromEntries([...document.querySelectorAll("#threads tbody tr")].map(
        tr => [tr.children[1].textContent, tr.querySelector("td.culprits").textContent])),
    };`);
  console.log("rendered: " + JSON.stringify({ labels: r.labels, inked: r.inked,
    histRows: r.histRows, histBars: r.histBars, worst: r.worst.length, range: r.range }));

  for (const name of expect.threads || [])
    check(r.labels.some((l) => l.startsWith(name + " ")), "a timeline track for thread " + name);
  if (expect.exactThreads)
    check(r.labels.length === expect.threads.length,
          `${expect.threads.length} timeline tracks (got ${r.labels.length})`);
  check(r.labels.length > 0 && r.inked.every((n) => n > 0), "every track canvas has pixels drawn");
  check(r.threadRows === r.labels.length, "a per-thread totals row per track");
  if (expect.histRows !== undefined)
    check(r.histRows === expect.histRows, `${expect.histRows} histogram rows (got ${r.histRows})`);
  if (expect.histBars !== undefined)
    check(r.histBars === expect.histBars, `${expect.histBars} histogram bars (got ${r.histBars})`);
  check(r.histBars > 0, "at least one histogram bar");
  if (expect.worst !== undefined)
    check(r.worst.length === expect.worst, `${expect.worst} worst-delay rows (got ${r.worst.length})`);
  check(r.worst.length > 0, "at least one worst-delay row");
  if (expect.firstWorst)
    check(r.worst[0][1] === expect.firstWorst.name && r.worst[0][3] === expect.firstWorst.us,
          `worst delay is ${expect.firstWorst.name} ${expect.firstWorst.us} us (got ${r.worst[0]})`);
  if (expect.firstWorst && expect.firstWorst.utc)
    check(r.worst[0][5] === expect.firstWorst.utc,
          `worst delay at ${expect.firstWorst.utc} (got ${r.worst[0][5]})`);
  if (expect.backend)
    check(r.summary.includes("Scheduler records from " + expect.backend + ", not dial9.ko"),
          `the header says the records came from ${expect.backend} (got ${r.summary})`);
  if (expect.utc) {
    /* UTC to ns since the epoch, exactly; null if it is not one */
    const utcNs = (u) => {
      const m = /^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)\.(\d{6})Z$/.exec(u || "");
      return m ? BigInt(Date.parse(m[1] + "Z")) * 1000000n + BigInt(m[2]) * 1000n : null;
    };
    const msNs = (ms) => BigInt(ms.replace(".", "")) * 1000n; /* "12.345" */
    const start = utcNs(r.startUtc);
    check(start !== null && r.summary.includes(r.startUtc),
          `the header shows the start's UTC (${r.startUtc})`);
    check(r.worstHead[5] === "at (UTC)", `a worst-delay column "at (UTC)" (got ${r.worstHead})`);
    const off = r.worst.filter((w) => {
      const u = utcNs(w[5]);
      if (u === null || start === null) return true;
      const d = u - start - msNs(w[4]);
      return d > 2000n || d < -2000n;
    });
    check(r.worst.length > 0 && !off.length,
          `every worst delay's UTC is the start's plus its "at (ms)" (${off.length} of ${r.worst.length} not: ${off[0]})`);
  }
  check(r.range[0] <= 0 && r.range[1] >= r.dur, "the timeline starts showing the whole trace");
  for (const [name, text] of Object.entries(expect.culprits || {}))
    check(r.culprits[name] === text,
          `${name}'s culprits are "${text}" (got "${r.culprits[name]}")`);

  await send("Page.captureScreenshot", { format: "png" }, s).then((p) =>
    fs.writeFileSync(shot, Buffer.from(p.data, "base64")));

  /* click the worst-delay row that EXPECT.click names (default: the first) */
  const k = expect.click || 0;
  const box = await ev(`
    const tr = document.querySelectorAll("#worst tbody tr.worst-row")[${k}];
    tr.scrollIntoView({ block: "center" });
    ${frames}
    const b = tr.getBoundingClientRect();
    return { x: b.left + b.width / 2, y: b.top + b.height / 2,
             ts: +tr.dataset.ts, delay: +tr.dataset.delay, thread: +tr.dataset.thread };`);
  for (const type of ["mouseMoved", "mousePressed", "mouseReleased"])
    await send("Input.dispatchMouseEvent",
               { type, x: box.x, y: box.y, button: "left", clickCount: 1 }, s);
  await ev(frames);
  const after = await ev(`
    const r = document.getElementById("range");
    return { start: +r.dataset.start, end: +r.dataset.end,
             rowSelected: document.querySelectorAll("#worst tbody tr.worst-row")[${k}]
                            .classList.contains("selected"),
             trackSelected: document.querySelector('#timeline .track[data-index="${box.thread}"]')
                              .classList.contains("selected"),
             text: r.textContent };`);
  console.log("after click: " + JSON.stringify(after));
  const why = await ev(`
    const D = JSON.parse(document.getElementById("dial9-data").textContent);
    const lane = document.getElementById("cpu-lane");
    return { data: (D.why || [])[${k}] || null,
             text: document.getElementById("why").textContent,
             laneShown: lane.classList.contains("shown") &&
                        lane.getBoundingClientRect().height > 0,
             laneLabel: lane.querySelector(".track-label").textContent };`);
  console.log("why: " + JSON.stringify(why));
  check(why.laneShown === !!why.data,
        "the CPU lane is shown exactly when the delay is explained");
  if (why.data) {
    check(why.text.includes(" waited ") && why.text.includes("on CPU " + why.data.cpu),
          `the explanation says how long and on which CPU (got "${why.text}")`);
    check(why.laneLabel.startsWith("CPU " + why.data.cpu + " "),
          `the lane is CPU ${why.data.cpu}'s (got "${why.laneLabel}")`);
    for (const r of why.data.ran)
      check(why.text.includes(r[0]), `the explanation names ${r[0]}, which ran meanwhile`);
  }
  for (const t of expect.why || [])
    check(why.text.includes(t), `the explanation holds "${t}" (got "${why.text}")`);
  check(after.start <= box.ts - box.delay && after.end >= box.ts,
        `visible range [${after.start}, ${after.end}] holds the delay [${box.ts - box.delay}, ${box.ts}]`);
  check(after.end - after.start < r.dur / 2, "the timeline zoomed in on it");
  check(after.rowSelected && after.trackSelected, "the row and the thread's track are marked");
  await send("Page.captureScreenshot", { format: "png" }, s).then((p) =>
    fs.writeFileSync(shot.replace(/\.png$/, "") + "-zoomed.png", Buffer.from(p.data, "base64")));

  /* a wheel over a track zooms in further around the pointer */
  const c = await ev(`
    const c = document.querySelector("#timeline .track canvas");
    c.scrollIntoView({ block: "center" });
    ${frames}
    const b = c.getBoundingClientRect();
    return { x: b.left + b.width / 2, y: b.top + b.height / 2 };`);
  await send("Input.dispatchMouseEvent",
             { type: "mouseWheel", x: c.x, y: c.y, deltaX: 0, deltaY: -300 }, s);
  await ev(frames);
  const wheel = await ev(`const r = document.getElementById("range");
                          return [+r.dataset.start, +r.dataset.end];`);
  check(wheel[1] - wheel[0] < after.end - after.start, "the mouse wheel zooms in");

  check(problems.length === 0, "no console errors or warnings" +
        (problems.length ? ": " + problems.join("; ") : ""));
  const foreign = requests.filter((u) => u !== url);
  check(foreign.length === 0, "no requests beyond the page itself" +
        (foreign.length ? ": " + foreign.join(", ") : ""));
  const exited = new Promise((resolve) => chrome.on("exit", resolve));
  await send("Browser.close").catch(() => {});
  await exited;
}

main().then(() => {
  clearTimeout(timer);
  fs.rmSync(profile, { recursive: true, force: true, maxRetries: 5 });
  if (failures.length) {
    console.log(failures.length + " check(s) failed");
    process.exit(1);
  }
  console.log("report page checks passed; screenshots " + shot);
  process.exit(0);
}, (e) => {
  console.log("FAILED: " + e.stack + "\n" + chromeErr.slice(-2000));
  chrome.kill("SIGKILL");
  process.exit(1);
});
