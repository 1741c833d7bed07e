#!/usr/bin/env node
// An independent S3 client for the tests (the AWS SDK for JavaScript v3):
// reads back what our code wrote, and checks the test peer itself.
//
// usage: s3-client.js --endpoint URL --access-key K --secret-key S [--region R] --bucket B CMD ARGS
//   list PREFIX          one JSON line per object: {"key","size","etag"}
//   sha256 KEY           the object's SHA-256 (hex) and size, as JSON
//   get KEY FILE         writes the object to FILE
//   put KEY FILE         uploads FILE (one PutObject)
//   delete KEY
//   fill PREFIX N        puts N small objects PREFIX00000..PREFIX<N-1> (16 at a time)
// Exit 0 on success; on an S3 error prints "CODE: message" and exits 1.
'use strict';
// The SDK warns on every start that later versions want Node.js 22; the pinned one runs on 20.
const emitWarning = process.emitWarning;
process.emitWarning = (w, ...rest) => {
  if (!/NodeVersionSupportWarning/.test(String(w) + String(rest[0]) + String(rest[0] && rest[0].type))) emitWarning(w, ...rest);
};
const crypto = require('crypto');
const fs = require('fs');
const {
  S3Client, ListObjectsV2Command, GetObjectCommand, PutObjectCommand, DeleteObjectCommand,
} = require('@aws-sdk/client-s3');

function parse(argv) {
  const o = { region: 'us-east-1', rest: [] };
  for (let i = 2; i < argv.length; i++) {
    if (argv[i].startsWith('--')) {
      o[argv[i].slice(2).replace(/-(.)/g, (_, c) => c.toUpperCase())] = argv[++i];
    } else o.rest.push(argv[i]);
  }
  return o;
}

async function body(out) {
  const chunks = [];
  for await (const c of out.Body) chunks.push(c);
  return Buffer.concat(chunks);
}

async function main() {
  const o = parse(process.argv);
  const s3 = new S3Client({
    endpoint: o.endpoint, region: o.region, forcePathStyle: true,
    credentials: { accessKeyId: o.accessKey, secretAccessKey: o.secretKey },
    requestChecksumCalculation: 'WHEN_REQUIRED', responseChecksumValidation: 'WHEN_REQUIRED',
  });
  const [cmd, a, b] = o.rest;
  const Bucket = o.bucket;
  if (cmd === 'list') {
    let token;
    do {
      const r = await s3.send(new ListObjectsV2Command({ Bucket, Prefix: a || undefined, ContinuationToken: token }));
      for (const c of r.Contents || []) console.log(JSON.stringify({ key: c.Key, size: c.Size, etag: c.ETag }));
      token = r.IsTruncated ? r.NextContinuationToken : undefined;
    } while (token);
  } else if (cmd === 'sha256') {
    const data = await body(await s3.send(new GetObjectCommand({ Bucket, Key: a })));
    console.log(JSON.stringify({ sha256: crypto.createHash('sha256').update(data).digest('hex'), size: data.length }));
  } else if (cmd === 'get') {
    fs.writeFileSync(b, await body(await s3.send(new GetObjectCommand({ Bucket, Key: a }))));
  } else if (cmd === 'put') {
    await s3.send(new PutObjectCommand({ Bucket, Key: a, Body: fs.readFileSync(b) }));
  } else if (cmd === 'fill') {
    const n = +b;
    for (let i = 0; i < n; i += 16) {
      const batch = [];
      for (let k = i; k < Math.min(n, i + 16); k++)
        batch.push(s3.send(new PutObjectCommand({ Bucket, Key: a + String(k).padStart(5, '0'), Body: `object ${k}\n` })));
      await Promise.all(batch);
    }
  } else if (cmd === 'delete') {
    await s3.send(new DeleteObjectCommand({ Bucket, Key: a }));
  } else {
    throw new Error(`unknown command ${cmd}`);
  }
}

main().catch((e) => {
  console.log(`${e.name || e.Code}: ${e.message}`);
  process.exit(1);
});
