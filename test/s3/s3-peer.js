#!/usr/bin/env node
// The S3 test peer: s3rver (a real S3 implementation of buckets, objects,
// listings and multipart uploads) behind a front that does what s3rver 3.7
// leaves out, checking every request's AWS Signature Version 4 as S3 does:
// header auth (AWS4-HMAC-SHA256), a known access key, the signature
// recomputed with AWS's own signer (@smithy/signature-v4, not our code) from
// the signed headers, the payload hash checked against the body, and the
// request time within 15 minutes. Errors are S3's XML: 403
// InvalidAccessKeyId / SignatureDoesNotMatch / AccessDenied /
// RequestTimeTooSkewed, 400 XAmzContentSHA256Mismatch. An x-amz-checksum-sha256
// header must be signed and the body's SHA-256 (400 BadDigest), as S3 checks
// it; its log line shows checksum=sha256. Requests that pass go to s3rver
// unchanged but for the Authorization header.
//
// Server-side encryption, which s3rver ignores: an x-amz-server-side-encryption
// header (and its -aws-kms-key-id) must be among the signed headers, as S3
// wants every x-amz-* header (403 AccessDenied otherwise), and must be
// AES256 or aws:kms (400 InvalidArgument). With --require-sse VALUE the peer
// refuses an object creation (PUT of an object, not of a part; POST ?uploads)
// without that value, as a bucket policy denying unencrypted uploads does
// (403 AccessDenied). The log line of a request that carried them shows
// sse=VALUE [kms=ID] before its last field (signed, or the error code), so a
// test can see what arrived, signed.
//
// usage: node --openssl-legacy-provider s3-peer.js --address 127.0.0.1 --port 0 --dir DIR --access-key K --secret-key S
//                   [--bucket NAME]... [--log FILE] [--max-body-mib N (default 64)] [--require-sse AES256|aws:kms]
// Prints "listening http://ADDR:PORT" once both servers are up; stops on SIGTERM.
'use strict';
// s3rver's ListObjectsV2 continuation tokens use DES, which OpenSSL 3 keeps in
// its legacy provider: without it a listing longer than a page fails, so
// the peer refuses to start without it.
if (!process.execArgv.includes('--openssl-legacy-provider')) {
  process.stderr.write('s3-peer: run it as node --openssl-legacy-provider s3-peer.js ... (s3rver lists with DES)\n');
  process.exit(2);
}
const crypto = require('crypto');
const fs = require('fs');
const http = require('http');
const S3rver = require('s3rver');
const { SignatureV4 } = require('@smithy/signature-v4');

const SKEW_MS = 15 * 60 * 1000;

function args(argv) {
  const o = { address: '127.0.0.1', port: 0, buckets: [] };
  for (let i = 2; i < argv.length; i++) {
    const k = argv[i].replace(/^--/, '');
    const v = argv[++i];
    if (v === undefined) throw new Error(`--${k} needs a value`);
    if (k === 'bucket') o.buckets.push(v);
    else o[k.replace(/-(.)/g, (_, c) => c.toUpperCase())] = v;
  }
  for (const need of ['dir', 'accessKey', 'secretKey'])
    if (!o[need]) throw new Error(`--${need.replace(/[A-Z]/g, (c) => '-' + c.toLowerCase())} is required`);
  return o;
}

// The Hash interface the signer wants, on Node's crypto.
class Sha256 {
  constructor(secret) { this.h = secret ? crypto.createHmac('sha256', secret) : crypto.createHash('sha256'); }
  update(d) { this.h.update(d); }
  digest() { return Promise.resolve(new Uint8Array(this.h.digest())); }
}

function xmlError(res, status, code, message) {
  const body = `<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>${code}</Code><Message>${message}</Message></Error>`;
  res.writeHead(status, { 'Content-Type': 'application/xml', 'Content-Length': Buffer.byteLength(body) });
  res.end(body);
}

function parseAuth(h) {
  const m = /^AWS4-HMAC-SHA256 (.*)$/.exec(h || '');
  if (!m) return null;
  const f = {};
  for (const part of m[1].split(',')) {
    const eq = part.indexOf('=');
    if (eq > 0) f[part.slice(0, eq).trim()] = part.slice(eq + 1).trim();
  }
  if (!f.Credential || !f.SignedHeaders || !f.Signature) return null;
  const [key, date, region, service, term] = f.Credential.split('/');
  return { key, date, region, service, term, signed: f.SignedHeaders.split(';'), signature: f.Signature };
}

// "20261126T195500Z" -> Date
function amzDate(s) {
  const m = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/.exec(s || '');
  return m ? new Date(Date.UTC(+m[1], m[2] - 1, +m[3], +m[4], +m[5], +m[6])) : null;
}

function rawQuery(url) {
  const q = url.indexOf('?');
  const out = {};
  if (q < 0) return out;
  for (const kv of url.slice(q + 1).split('&')) {
    if (!kv) continue;
    const eq = kv.indexOf('=');
    const k = decodeURIComponent(eq < 0 ? kv : kv.slice(0, eq));
    out[k] = eq < 0 ? '' : decodeURIComponent(kv.slice(eq + 1));
  }
  return out;
}

async function check(o, req, body) {
  const a = parseAuth(req.headers.authorization);
  if (!a) return [403, 'AccessDenied', 'Anonymous access is forbidden for this operation (no AWS4-HMAC-SHA256 Authorization header)'];
  if (a.key !== o.accessKey) return [403, 'InvalidAccessKeyId', 'The AWS Access Key Id you provided does not exist in our records.'];
  if (a.service !== 's3' || a.term !== 'aws4_request') return [403, 'SignatureDoesNotMatch', `bad credential scope ${a.service}/${a.term}`];
  for (const h of ['host', 'x-amz-date', 'x-amz-content-sha256'])
    if (!a.signed.includes(h)) return [403, 'AccessDenied', `${h} is not among the signed headers`];
  const when = amzDate(req.headers['x-amz-date']);
  if (!when || Math.abs(Date.now() - when.getTime()) > SKEW_MS)
    return [403, 'RequestTimeTooSkewed', 'The difference between the request time and the current time is too large.'];
  if (a.date !== req.headers['x-amz-date'].slice(0, 8)) return [403, 'SignatureDoesNotMatch', 'credential date is not the request date'];
  const declared = req.headers['x-amz-content-sha256'];
  if (declared !== 'UNSIGNED-PAYLOAD') {
    const actual = crypto.createHash('sha256').update(body).digest('hex');
    if (declared !== actual)
      return [400, 'XAmzContentSHA256Mismatch', "The provided 'x-amz-content-sha256' header does not match what was computed."];
  }
  // S3 wants every x-amz-* header a request carries signed; the encryption headers are checked here.
  for (const h of Object.keys(req.headers))
    if (h.startsWith('x-amz-server-side-encryption') && !a.signed.includes(h))
      return [403, 'AccessDenied', `There were headers present in the request which were not signed: ${h}`];
  // A checksum of the content (x-amz-checksum-sha256, base64), as S3 checks it before it stores
  // the object (s3rver ignores it): signed, and the body's.
  const cs = req.headers['x-amz-checksum-sha256'];
  if (cs !== undefined) {
    if (!a.signed.includes('x-amz-checksum-sha256'))
      return [403, 'AccessDenied', 'There were headers present in the request which were not signed: x-amz-checksum-sha256'];
    if (cs !== crypto.createHash('sha256').update(body).digest('base64'))
      return [400, 'BadDigest', 'The SHA256 you specified did not match the calculated checksum.'];
  }
  const sse = req.headers['x-amz-server-side-encryption'];
  if (sse !== undefined && sse !== 'AES256' && sse !== 'aws:kms')
    return [400, 'InvalidArgument', `The encryption method specified is not supported: ${sse}`];
  if (req.headers['x-amz-server-side-encryption-aws-kms-key-id'] !== undefined && sse !== 'aws:kms')
    return [400, 'InvalidArgument', 'x-amz-server-side-encryption-aws-kms-key-id needs x-amz-server-side-encryption: aws:kms'];
  const q0 = rawQuery(req.url);
  const creates = (req.method === 'PUT' && !('partNumber' in q0) && !req.url.match(/^\/[^/]+\/?(\?|$)/)) ||
    (req.method === 'POST' && 'uploads' in q0);
  if (o.requireSse && creates && sse !== o.requireSse)
    return [403, 'AccessDenied', `the bucket policy denies uploads without x-amz-server-side-encryption: ${o.requireSse}`];
  const headers = {};
  for (const h of a.signed) {
    const v = req.headers[h];
    if (v === undefined) return [403, 'SignatureDoesNotMatch', `signed header ${h} is missing`];
    headers[h] = Array.isArray(v) ? v.join(',') : String(v);
  }
  const q = req.url.indexOf('?');
  const signer = new SignatureV4({
    credentials: { accessKeyId: o.accessKey, secretAccessKey: o.secretKey },
    region: a.region, service: 's3', sha256: Sha256, uriEscapePath: false, applyChecksum: true,
  });
  const signed = await signer.sign({
    method: req.method, protocol: 'http:', hostname: String(req.headers.host).replace(/:\d+$/, ''),
    path: q < 0 ? req.url : req.url.slice(0, q), query: rawQuery(req.url), headers, body,
  }, { signingDate: when, signingRegion: a.region, signableHeaders: new Set(a.signed) });
  const want = /Signature=([0-9a-f]+)/.exec(signed.headers.authorization)[1];
  const got = Buffer.from(a.signature);
  if (got.length !== want.length || !crypto.timingSafeEqual(got, Buffer.from(want)))
    return [403, 'SignatureDoesNotMatch', 'The request signature we calculated does not match the signature you provided. Check your key and signing method.'];
  return null;
}

async function main() {
  const o = args(process.argv);
  const log = o.log ? fs.createWriteStream(o.log, { flags: 'a' }) : null;
  const MAX_BODY = (+o.maxBodyMib || 64) * 1024 * 1024;
  fs.mkdirSync(o.dir, { recursive: true });
  const inner = new S3rver({
    address: '127.0.0.1', port: 0, silent: true, directory: o.dir,
    configureBuckets: o.buckets.map((name) => ({ name, configs: [] })),
  });
  const { port: innerPort } = await inner.run();
  const counts = { ok: 0, refused: 0 };
  const front = http.createServer((req, res) => {
    const chunks = [];
    let size = 0;
    req.on('data', (c) => {
      size += c.length;
      if (size <= MAX_BODY) chunks.push(c);
    });
    req.on('end', async () => {
      if (size > MAX_BODY) return xmlError(res, 400, 'EntityTooLarge', `this test peer takes at most ${MAX_BODY >> 20} MiB per request (--max-body-mib)`);
      const body = Buffer.concat(chunks);
      let err;
      try {
        err = await check(o, req, body);
      } catch (e) {
        err = [500, 'InternalError', String(e)];
      }
      const sse = req.headers['x-amz-server-side-encryption'], kms = req.headers['x-amz-server-side-encryption-aws-kms-key-id'];
      const sseNote = (sse === undefined ? '' : ` sse=${sse}` + (kms === undefined ? '' : ` kms=${kms}`)) +
        (req.headers['x-amz-checksum-sha256'] === undefined ? '' : ' checksum=sha256');
      if (log) log.write(`${new Date().toISOString()} ${req.method} ${req.url} ${body.length}${sseNote} ${err ? err[1] : 'signed'}\n`);
      if (err) {
        counts.refused++;
        return xmlError(res, ...err);
      }
      counts.ok++;
      const headers = { ...req.headers };
      delete headers.authorization; // s3rver 3.7 knows only its own dummy key
      headers['content-length'] = String(body.length);
      delete headers['transfer-encoding'];
      const up = http.request({ host: '127.0.0.1', port: innerPort, method: req.method, path: req.url, headers }, (r) => {
        res.writeHead(r.statusCode, r.headers);
        r.pipe(res);
      });
      up.on('error', (e) => xmlError(res, 502, 'InternalError', String(e)));
      up.end(body);
    });
  });
  front.listen(+o.port, o.address, () => {
    const a = front.address();
    process.stdout.write(`listening http://${a.address}:${a.port}\n`);
  });
  const stop = async () => {
    front.close();
    await inner.close();
    if (log) log.write(`stopped: ${counts.ok} signed requests served, ${counts.refused} refused\n`);
    process.exit(0);
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}

main().catch((e) => {
  process.stderr.write(`s3-peer: ${e.message}\n`);
  process.exit(2);
});
