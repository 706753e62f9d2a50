// SPDX-License-Identifier: MIT
//
// server.js - the S3-compatible server dial9's upload tests talk to, on
// loopback only: s3rver (objects, metadata, ListObjectsV2, path-style) on
// an internal port, behind a front that checks every request's AWS
// Signature Version 4 (s3rver itself only checks that the access key id
// exists) and, if given, the session token. Then the front proxies the
// request to s3rver.
//
//   node server.js --port P --dir D --bucket B [--bucket B2...]
//        [--access-key AK --secret SK] [--token TOKEN] [--fail 503,429,...]
//
// --fail answers the first correctly signed PUTs with these statuses
// (throttling, a failing backend) instead of storing them.
// Prints "ready PORT" on stdout once both listen; SIGTERM stops it. The
// objects live in D, so a restart with the same D serves them again.
'use strict';

const crypto = require('crypto');
const http = require('http');
const S3rver = require('s3rver');

const args = { port: 0, dir: null, buckets: [], ak: 'dial9test',
	       sk: 'dial9secret', token: null, fail: [] };
for (let i = 2; i < process.argv.length; i += 2) {
	const k = process.argv[i], v = process.argv[i + 1];
	if (k === '--port') args.port = Number(v);
	else if (k === '--dir') args.dir = v;
	else if (k === '--bucket') args.buckets.push(v);
	else if (k === '--access-key') args.ak = v;
	else if (k === '--secret') args.sk = v;
	else if (k === '--token') args.token = v;
	else if (k === '--fail') args.fail = v.split(',').map(Number);
	else { console.error(`server.js: unknown option ${k}`); process.exit(2); }
}
if (!args.dir) { console.error('server.js: --dir is required'); process.exit(2); }

const sha256hex = (b) => crypto.createHash('sha256').update(b).digest('hex');
const hmac = (k, s) => crypto.createHmac('sha256', k).update(s).digest();

// RFC 3986 unreserved characters stay, everything else is %XX (uppercase).
function uriEncode(s) {
	return Buffer.from(s, 'utf8').toString('latin1').replace(
		/[^A-Za-z0-9\-._~]/g,
		(c) => '%' + c.charCodeAt(0).toString(16).toUpperCase().padStart(2, '0'));
}

function decode(s) {
	try { return decodeURIComponent(s.replace(/\+/g, '%20')); } catch (e) { return null; }
}

function s3error(res, status, code, message) {
	res.writeHead(status, { 'Content-Type': 'application/xml' });
	res.end('<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>' + code +
		'</Code><Message>' + message + '</Message></Error>');
}

// Returns null if the request is correctly signed, else [status, code, why].
function verify(req, body) {
	const auth = req.headers['authorization'];
	if (!auth) return [403, 'AccessDenied', 'anonymous requests are refused'];
	const m = /^AWS4-HMAC-SHA256 Credential=([^/]+)\/(\d{8})\/([^/]+)\/s3\/aws4_request, ?SignedHeaders=([a-z0-9;-]+), ?Signature=([0-9a-f]{64})$/.exec(auth);
	if (!m) return [400, 'AuthorizationHeaderMalformed', 'cannot parse Authorization'];
	const [, ak, day, region, signed, sig] = m;
	if (ak !== args.ak) return [403, 'InvalidAccessKeyId', 'unknown access key'];
	const amzDate = req.headers['x-amz-date'];
	if (!amzDate || !amzDate.startsWith(day)) return [403, 'AccessDenied', 'x-amz-date missing or not of the credential day'];
	const t = Date.UTC(+amzDate.slice(0, 4), +amzDate.slice(4, 6) - 1, +amzDate.slice(6, 8),
			   +amzDate.slice(9, 11), +amzDate.slice(11, 13), +amzDate.slice(13, 15));
	if (Math.abs(Date.now() - t) > 15 * 60 * 1000) return [403, 'RequestTimeTooSkewed', 'clock skew'];
	const names = signed.split(';');
	for (const need of ['host', 'x-amz-date', 'x-amz-content-sha256'])
		if (!names.includes(need)) return [403, 'AccessDenied', `${need} is not signed`];
	for (const h of Object.keys(req.headers))
		if (h.startsWith('x-amz-') && !names.includes(h)) return [403, 'AccessDenied', `${h} is not signed`];
	if (args.token !== null) {
		if (req.headers['x-amz-security-token'] !== args.token)
			return [403, 'InvalidToken', 'wrong or missing session token'];
	}
	const payload = req.headers['x-amz-content-sha256'];
	if (!payload) return [400, 'MissingRequiredHeader', 'x-amz-content-sha256'];
	if (payload !== 'UNSIGNED-PAYLOAD' && payload !== sha256hex(body))
		return [400, 'XAmzContentSHA256Mismatch', 'payload hash'];
	const q = req.url.indexOf('?');
	const rawPath = q < 0 ? req.url : req.url.slice(0, q);
	const rawQuery = q < 0 ? '' : req.url.slice(q + 1);
	const segs = rawPath.split('/').map(decode);
	if (segs.includes(null)) return [400, 'InvalidURI', 'bad percent-encoding'];
	const canonUri = segs.map(uriEncode).join('/');
	const pairs = rawQuery ? rawQuery.split('&').map((p) => {
		const e = p.indexOf('=');
		const k = decode(e < 0 ? p : p.slice(0, e)), v = decode(e < 0 ? '' : p.slice(e + 1));
		return [uriEncode(k || ''), uriEncode(v || '')];
	}) : [];
	pairs.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : a[1] < b[1] ? -1 : a[1] > b[1] ? 1 : 0));
	const canonQuery = pairs.map((p) => p[0] + '=' + p[1]).join('&');
	let canonHeaders = '';
	for (const n of names) {
		const v = req.headers[n];
		if (v === undefined) return [403, 'AccessDenied', `signed header ${n} is missing`];
		canonHeaders += n + ':' + String(v).trim().replace(/\s+/g, ' ') + '\n';
	}
	const canonical = [req.method, canonUri, canonQuery, canonHeaders, signed, payload].join('\n');
	const scope = `${day}/${region}/s3/aws4_request`;
	const toSign = ['AWS4-HMAC-SHA256', amzDate, scope, sha256hex(canonical)].join('\n');
	let key = hmac('AWS4' + args.sk, day);
	key = hmac(key, region);
	key = hmac(key, 's3');
	key = hmac(key, 'aws4_request');
	const want = crypto.createHmac('sha256', key).update(toSign).digest('hex');
	if (want !== sig) return [403, 'SignatureDoesNotMatch', 'signature'];
	return null;
}

async function main() {
	const backend = new S3rver({
		address: '127.0.0.1', port: 0, directory: args.dir, silent: true,
		configureBuckets: args.buckets.map((name) => ({ name })),
	});
	const { port: bport } = await backend.run();
	const front = http.createServer((req, res) => {
		const chunks = [];
		req.on('data', (c) => chunks.push(c));
		req.on('end', () => {
			const body = Buffer.concat(chunks);
			const bad = verify(req, body);
			if (bad) return s3error(res, bad[0], bad[1], bad[2]);
			if (req.method === 'PUT' && args.fail.length) {
				const st = args.fail.shift();
				return s3error(res, st, st === 429 ? 'SlowDown' : 'ServiceUnavailable',
					       'injected by --fail');
			}
			const headers = { ...req.headers };
			delete headers['authorization'];
			headers['content-length'] = String(body.length);
			const up = http.request({ host: '127.0.0.1', port: bport, method: req.method,
						  path: req.url, headers }, (ur) => {
				res.writeHead(ur.statusCode, ur.headers);
				ur.pipe(res);
			});
			up.on('error', () => s3error(res, 500, 'InternalError', 'backend'));
			up.end(body);
		});
	});
	front.listen(args.port, '127.0.0.1', () => {
		process.stdout.write(`ready ${front.address().port}\n`);
	});
	const stop = () => { front.close(); backend.close().finally(() => process.exit(0)); };
	process.on('SIGTERM', stop);
	process.on('SIGINT', stop);
}

main().catch((e) => { console.error('server.js:', e.message); process.exit(1); });
