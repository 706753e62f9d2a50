// SPDX-License-Identifier: MIT
//
// check.mjs OUT - what tests/fleet/run.sh left in OUT, checked with DuckDB
// (@duckdb/node-api, pinned in package-lock.json) reading the summaries
// where they lie: OUT/bucket/summary/version=1/..., Hive-partitioned.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';

const out = process.argv[2];
const bucket = path.join(out, 'bucket');
const glob = path.join(bucket, 'summary', '**', '*.json.gz');
let passed = 0, failed = 0;

function check(name, fn) {
	try {
		fn();
		passed++;
		console.log(`ok - ${name}`);
	} catch (e) {
		failed++;
		console.log(`not ok - ${name}\n${e.stack}`);
	}
}

const db = await DuckDBInstance.create(':memory:');
const con = await db.connect();
async function q(sql) {
	return (await con.runAndReadAll(sql)).getRowObjectsJson();
}
const src = `read_json('${glob}', hive_partitioning = true, format = 'newline_delimited')`;

// ---- every row against dial9 sched on its segment ----
const rows = await q(`SELECT * FROM ${src} ORDER BY host, service_name, segment, tid`);
const prefix = 'fleet-traces/';
const segOf = (r) => r.segment.startsWith(prefix) ? r.segment.slice(prefix.length) : r.segment;

const sched = loadSched('sched');

check('DuckDB reads every summary, rows of three hosts and two services', () => {
	assert.ok(rows.length >= 8, `${rows.length} rows`);
	assert.deepEqual([...new Set(rows.map((r) => r.host))].sort(), ['db-1', 'web-1', 'web-2']);
	assert.deepEqual([...new Set(rows.map((r) => r.service_name))].sort(), ['api', 'db']);
});

check('the Hive partitions agree with the rows', () => {
	for (const r of rows) {
		assert.equal(r.instance, r.host);
		assert.equal(r.service, r.service_name);
		assert.equal(r.boot, r.boot_id);
		assert.equal(String(r.version), '1');
		assert.equal(r.date, r.window_start.slice(0, 10));
	}
});

function loadSched(dir) {
	const m = new Map(); // segment path below the directory -> dial9 sched --json
	for (const rel of fs.readFileSync(path.join(out, dir, 'index.txt'), 'utf8').trim().split('\n'))
		m.set(rel, JSON.parse(fs.readFileSync(path.join(out, dir, rel.replaceAll('/', '_') + '.json'), 'utf8')));
	return m;
}

// Every row equals dial9 sched of that thread in that segment, and no
// thread of dial9 sched is missing; returns how many rows were compared.
function sameAsSched(rows, sched, segOf) {
	let compared = 0;
	const seen = new Map();
	for (const r of rows) {
		const s = sched.get(segOf(r));
		assert.ok(s, `no dial9 sched output for segment ${r.segment}`);
		const t = s.threads.filter((x) => String(x.tid) === String(r.tid));
		assert.equal(t.length, 1, `tid ${r.tid} in ${r.segment}`);
		const x = t[0];
		const want = {
			host: x.host, boot_id: x.boot_id, pid: x.pid, switches: x.switches,
			voluntary: x.voluntary, involuntary: x.involuntary,
			on_cpu_ns: x.on_cpu_ns, runnable_ns: x.runnable_ns,
			blocked_ns: x.blocked_ns, unknown_ns: x.unknown_ns,
			runq_total_ns: x.runq_total_ns, waits: x.waits,
			delay_count: x.delay.count, delay_sum_ns: x.delay.sum_ns,
			delay_max_ns: x.delay.max_ns, delay_p50_ns: x.delay.p50_ns,
			delay_p99_ns: x.delay.p99_ns,
			delay_max_at_mono_ns: x.delay.count ? x.delay.max_at_ns : 0,
			lost_sched: s.lost, lost_app: s.lost_app, migrations: x.migrations,
		};
		const got = {};
		for (const k of Object.keys(want)) {
			got[k] = typeof want[k] === 'number' ? Number(r[k]) : r[k];
		}
		assert.deepEqual(got, want, `${r.segment} tid ${r.tid}`);
		// the wall clock beside the trace's time, both in dial9 sched and here
		if (x.delay.count) {
			assert.equal(r.delay_max_at.replace(' ', 'T').slice(0, 23),
				     x.delay.max_at_utc.slice(0, 23));
		}
		// wall clock = the segment's clock sync moved by the trace's time
		if (x.delay.count)
			assert.equal(BigInt(r.delay_max_at_ns), BigInt(r.window_start_ns) +
				     BigInt(r.delay_max_at_mono_ns) - BigInt(r.window_start_mono_ns));
		const h = r.hist_us_log2.map(Number);
		assert.equal(h.reduce((a, b) => a + b, 0), x.delay.count);
		seen.set(segOf(r), (seen.get(segOf(r)) || 0) + 1);
		compared++;
	}
	// and no thread of dial9 sched is missing from the summaries
	for (const [rel, s] of sched)
		if (s.threads.length)
			assert.equal(seen.get(rel), s.threads.length, `threads of ${rel}`);
	return compared;
}

check('each row is dial9 sched of that thread in that segment', () => {
	assert.ok(sameAsSched(rows, sched, segOf) >= 8);
});

// ---- worst p99 by host and service ----
const duck = (await q(`
	SELECT host, service_name AS service, max(delay_p99_ns) AS p99_ns,
	       max(delay_max_ns) AS max_ns, sum(runq_total_ns) AS runq_total_ns
	FROM ${src}
	WHERE delay_count > 0 OR waits > 0
	GROUP BY host, service_name
	ORDER BY p99_ns DESC, max_ns DESC, host, service`)).map((r) => ({
	host: r.host, service: r.service, p99_ns: Number(r.p99_ns),
	max_ns: Number(r.max_ns), runq_total_ns: Number(r.runq_total_ns),
}));

check('DuckDB\'s worst p99 by host and service is dial9 sched\'s', () => {
	const m = new Map();
	for (const [rel, s] of sched) {
		const service = decodeURIComponent(/service=([^/]*)/.exec(rel)[1]);
		for (const t of s.threads) {
			if (!t.delay.count && !t.waits)
				continue;
			const k = `${t.host}\u0000${service}`;
			const g = m.get(k) || { host: t.host, service, p99_ns: 0, max_ns: 0, runq_total_ns: 0 };
			g.p99_ns = Math.max(g.p99_ns, t.delay.p99_ns);
			g.max_ns = Math.max(g.max_ns, t.delay.max_ns);
			g.runq_total_ns += t.runq_total_ns;
			m.set(k, g);
		}
	}
	const want = [...m.values()].sort((a, b) => b.p99_ns - a.p99_ns ||
		b.max_ns - a.max_ns || a.host.localeCompare(b.host) || a.service.localeCompare(b.service));
	assert.equal(duck.length, 4);
	assert.deepEqual(duck, want);
	console.log('worst p99 by host and service:');
	for (const r of duck)
		console.log(`  ${r.host.padEnd(8)} ${r.service.padEnd(5)} p99 ${(r.p99_ns / 1e6).toFixed(3)} ms  max ${(r.max_ns / 1e6).toFixed(3)} ms`);
});

const fleet = (f) => JSON.parse(fs.readFileSync(path.join(out, f), 'utf8'));
const ranking = (j) => j.groups.map((g) => ({
	host: g.host, service: g.service, p99_ns: g.p99_ns, max_ns: g.max_ns,
	runq_total_ns: g.runq_total_ns,
}));

check('dial9 fleet on the directory gives DuckDB\'s ranking', () => {
	const j = fleet('fleet-dir.json');
	assert.equal(j.by, 'host,service');
	assert.deepEqual(ranking(j), duck);
	for (const g of j.groups) {
		assert.match(g.max_at_utc, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/);
		assert.ok(g.max_at_mono_ns > 0);
	}
});

check('dial9 fleet from S3 (--since 1h --until now) gives the same', () => {
	assert.deepEqual(ranking(fleet('fleet-s3.json')), duck);
});

{
	const byHost = (await q(`SELECT host, max(delay_p99_ns) AS p99 FROM ${src}
		WHERE delay_count > 0 OR waits > 0 GROUP BY host
		ORDER BY p99 DESC, max(delay_max_ns) DESC, host`))
		.map((r) => [r.host, Number(r.p99)]);
	const bySvc = (await q(`SELECT service_name AS s, max(delay_p99_ns) AS p99 FROM ${src}
		WHERE delay_count > 0 OR waits > 0 GROUP BY s
		ORDER BY p99 DESC, max(delay_max_ns) DESC, s`))
		.map((r) => [r.s, Number(r.p99)]);
	const byThread = (await q(`SELECT host, service_name AS s, boot_id, tid,
		max(delay_p99_ns) AS p99 FROM ${src} WHERE delay_count > 0 OR waits > 0
		GROUP BY ALL ORDER BY p99 DESC`)).map((r) => Number(r.p99));
	check('dial9 fleet --by host is DuckDB\'s GROUP BY host', () => {
		assert.deepEqual(fleet('fleet-hosts.json').groups.map((g) => [g.host, g.p99_ns]), byHost);
	});
	check('dial9 fleet --by service is DuckDB\'s GROUP BY service', () => {
		assert.deepEqual(fleet('fleet-services.json').groups.map((g) => [g.service, g.p99_ns]), bySvc);
	});
	check('dial9 fleet --by thread ranks every thread by its worst p99', () => {
		assert.deepEqual(fleet('fleet-threads.json').groups.map((g) => g.p99_ns), byThread);
	});
}

check('a range with no summary in it has no rows', () => {
	const j = fleet('fleet-past.json');
	assert.equal(j.rows, 0);
	assert.equal(j.groups.length, 0);
});

check('dial9 fleet --fetch downloads the segments of the worst delays', () => {
	const j = fleet('fleet-s3.json');
	const want = new Set();
	for (const g of j.groups.slice(0, 2)) {
		want.add(g.worst_p99_segment);
		want.add(g.worst_max_segment);
	}
	const got = [];
	const walk = (d) => {
		for (const e of fs.readdirSync(d, { withFileTypes: true })) {
			const p = path.join(d, e.name);
			if (e.isDirectory())
				walk(p);
			else
				got.push(prefix + path.relative(path.join(out, 'worst'), p));
		}
	};
	walk(path.join(out, 'worst'));
	assert.deepEqual(got.sort(), [...want].sort());
	for (const k of got) /* byte for byte what dial9 fetch got from the bucket */
		assert.ok(fs.readFileSync(path.join(out, 'worst', k.slice(prefix.length)))
			.equals(fs.readFileSync(path.join(bucket, k.slice(prefix.length)))));
});

// ---- write-back: the same layout below the directory ----
const wbRows = await q(`SELECT * FROM read_json('${path.join(out, 'wb', 'summary', '**', '*.json.gz')}',
	hive_partitioning = true, format = 'newline_delimited') ORDER BY segment, tid`);
check('write-back: summaries under {dir}/summary/version=1/..., each row dial9 sched\'s', () => {
	assert.ok(wbRows.length >= 2, `${wbRows.length} rows`);
	for (const r of wbRows) {
		assert.equal(r.host, 'wb-1');
		assert.equal(r.instance, 'wb-1');
		assert.equal(r.service, 'batch');
		assert.ok(fs.existsSync(path.join(out, 'wb', r.segment)), `${r.segment} is not in the directory`);
	}
	assert.equal(sameAsSched(wbRows, loadSched('sched-wb'), (r) => r.segment), wbRows.length);
	const j = fleet('fleet-wb.json');
	assert.equal(j.groups.length, 1);
	assert.equal(j.groups[0].host, 'wb-1');
	assert.equal(j.groups[0].p99_ns, Math.max(...wbRows.filter((r) => Number(r.delay_count) || Number(r.waits))
		.map((r) => Number(r.delay_p99_ns))));
});

console.log(`${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
