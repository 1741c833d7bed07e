#!/usr/bin/env python3
"""`cluster-etcd-operator s3` against a real S3 implementation (s3rver)
behind a front that checks every request's AWS Signature V4 with AWS's own
signer (test/s3/s3-peer.js), what we wrote read back with the AWS SDK for
JavaScript (test/s3/s3-client.js) and the other way round:

- a single PUT and a multipart upload (5 MiB parts, 3 parts) under a
  prefix, keys with spaces, '+', '=' and non-ASCII bytes: every request
  signed right, the objects' SHA-256 as the SDK reads them equal the files';
- an object the SDK wrote comes back through `s3 get` byte for byte;
- a listing longer than one page (1005 objects: continuation tokens);
- delete; a missing object is exit 1 with NoSuchKey and no file left;
- a wrong secret key, an unknown access key, a missing bucket: exit 1 with
  S3's code and what to check, and nothing stored; missing credential files
  and bad flags: exit 2 naming the file or the flag;
- an endpoint that does not answer: retried, then exit 1 naming it;
- an endpoint that says "truncated" for ever (review L2), with the same
  continuation token or a new one each time: exit 1 after the repeat, or
  after 1000 pages, not a loop that grows without end;
- purge: every object under the prefix goes (a dry run deletes nothing),
  none beside it, and never without a prefix;
- gc of <prefix>/v2/: LimitBased keeps the newest N full snapshots (a dry
  run deletes nothing), Exponential drops what is past five weeks, and
  objects that are no full snapshot directly under v2/ are never touched;
- review M1: only snapshots whose checksum file (checksums/<name>.json) is
  signed with the credentials' backupKey count: names another writer adds
  (unsigned, signed with another key, our checksum file copied under a
  higher revision) are neither counted nor deleted by gc nor "latest" for
  get-backup, which also refuses one by name and a tarball changed in the
  store; gc and get-backup without backupKey are exit 2 naming it;
- an http:// endpoint without insecureHTTP: exit 2 naming the file, no
  request sent;
- server-side encryption (review M1): with serverSideEncryption AES256 the
  single PUT and the multipart upload's creation carry the header, signed
  (a peer whose "bucket policy" demands it refuses uploads without it), and
  aws:kms with sseKMSKeyId sends both headers;
- the peer itself refuses the SDK with a wrong secret, accepts curl's own
  SigV4 signer, and refuses it when the body is not the one signed;
- a FIPS host (issue 35 item 8): with MD5 refused to the process (NO_MD5_SHIM,
  test/integration/no-md5-shim.c, in LD_PRELOAD) the single PUT and the
  multipart upload still succeed and read back byte for byte, the single PUT
  carrying x-amz-checksum-sha256 (signed, and checked by the peer as S3 checks
  it), and the command says that it checks by SHA-256 and size instead of ETag.
Usage: test_s3.py BINARY SOURCE_DIR NO_MD5_SHIM"""
import hashlib
import hmac
import http.server
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

BIN, SRC, NO_MD5_SHIM = sys.argv[1], sys.argv[2], sys.argv[3]
S3DIR = os.path.join(SRC, "test", "s3")
AK, SK, BUCKET = "AKIACEOTEST", "s3cr3t/with+odd=chars", "etcd-backups"
BACKUP_KEY = "this-clusters-backup-key-0123456789abcdef"
KIND = "cluster-etcd-operator-backup-checksums"
ADDR = "127.0.83.1"


def checksums(snap, tar, revision, created, key=BACKUP_KEY, cluster=0x1234ABCD):
    """A checksum file as cluster-backup writes it (operator/dr/backup-manifest.c), written here
    from its documented fields, the HMAC-SHA256 over its canonical lines with `key`."""
    files = [{"name": os.path.basename(p), "sha256": sha(p), "size": str(os.path.getsize(p))} for p in (snap, tar)]
    text = "%s v1\nsnapshot %s %s %s\ntarball %s %s %s\nrevision %d\nclusterID %016x\ncreated %d\n" % (
        KIND, files[0]["name"], files[0]["sha256"], files[0]["size"], files[1]["name"], files[1]["sha256"],
        files[1]["size"], revision, cluster, created)
    m = {"kind": KIND, "version": 1, "snapshot": files[0], "tarball": files[1], "revision": str(revision),
         "clusterID": "%016x" % cluster, "created": str(created)}
    if key:
        m["hmacSHA256"] = hmac.new(key.encode(), text.encode(), hashlib.sha256).hexdigest()
    return json.dumps(m)


def sha(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for b in iter(lambda: f.read(1 << 20), b""):
            h.update(b)
    return h.hexdigest()


class EndlessListing(http.server.BaseHTTPRequestHandler):
    """Every LIST is truncated: bucket loop-same always with the token T, any other bucket with
    a new token each time. Counts the requests."""
    pages = 0

    def do_GET(self):
        EndlessListing.pages += 1
        token = "T" if "/loop-same" in self.path else "T%d" % EndlessListing.pages
        body = ("<?xml version=\"1.0\" encoding=\"UTF-8\"?><ListBucketResult><IsTruncated>true</IsTruncated>"
                "<NextContinuationToken>%s</NextContinuationToken><Contents><Key>k%d</Key><Size>1</Size>"
                "</Contents></ListBucketResult>" % (token, EndlessListing.pages)).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/xml")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def main():
    if not os.path.isdir(os.path.join(S3DIR, "node_modules", "s3rver")):
        sys.exit("test/s3/node_modules is missing: run hack/install-deps.sh (npm ci in test/s3)")
    tmp = tempfile.mkdtemp(prefix="test-s3-")
    log = os.path.join(tmp, "peer.log")
    peer = subprocess.Popen(["node", "--openssl-legacy-provider", os.path.join(S3DIR, "s3-peer.js"), "--address", ADDR, "--port", "0",
                             "--dir", os.path.join(tmp, "store"), "--access-key", AK, "--secret-key", SK,
                             "--bucket", BUCKET, "--log", log], stdout=subprocess.PIPE, text=True)
    try:
        line = peer.stdout.readline().split()
        assert line and line[0] == "listening", "the S3 peer did not start: %s" % line
        endpoint = line[1]

        def creds(name, **files):
            d = os.path.join(tmp, name)
            os.makedirs(d)
            base = {"accessKeyID": AK, "secretAccessKey": SK + "\n", "region": "eu-west-1",
                    "endpoint": endpoint, "s3ForcePathStyle": "true", "insecureHTTP": "true",
                    "backupKey": BACKUP_KEY + "\n"}
            base.update(files)
            for k, v in base.items():
                if v is not None:
                    with open(os.path.join(d, k), "w") as f:
                        f.write(v)
            return d

        good = creds("good")

        def ours(*args, d=good, bucket=BUCKET, prefix="clusters/prod-1", env=None):
            argv = [BIN, "s3"] + list(args) + ["--credentials-dir", d, "--bucket", bucket]
            if prefix:
                argv += ["--prefix", prefix]
            return subprocess.run(argv, capture_output=True, text=True, timeout=120, env=env)

        def sdk(*args):
            r = subprocess.run(["node", os.path.join(S3DIR, "s3-client.js"), "--endpoint", endpoint,
                                "--region", "eu-west-1", "--access-key", AK, "--secret-key", SK,
                                "--bucket", BUCKET] + list(args), capture_output=True, text=True, timeout=300)
            assert r.returncode == 0, "SDK %s: %s %s" % (args, r.stdout, r.stderr)
            return r.stdout

        small, big = os.path.join(tmp, "small.db"), os.path.join(tmp, "big.db")
        with open(small, "wb") as f:
            f.write(os.urandom(1 << 20))
        with open(big, "wb") as f:
            f.write(os.urandom(12_000_000))
        odd = "snapshots/a b+c=d&é.db"

        r = ours("put", small, odd)
        assert r.returncode == 0, r.stderr
        r = ours("put", big, "big.db", "--part-size", "5")
        assert r.returncode == 0, r.stderr
        assert "3 parts of 5 MiB" in r.stderr, r.stderr
        for key, path in [("clusters/prod-1/" + odd, small), ("clusters/prod-1/big.db", big)]:
            got = json.loads(sdk("sha256", key))
            assert got["sha256"] == sha(path) and got["size"] == os.path.getsize(path), (key, got)

        # A FIPS host: MD5 refused to the process. The uploads go on, checked by SHA-256 and size.
        asan = os.environ.get("ASAN_OPTIONS", "")
        fips = dict(os.environ, LD_PRELOAD=NO_MD5_SHIM,
                    ASAN_OPTIONS=(asan + ":" if asan else "") + "verify_asan_link_order=0")
        r = ours("put", small, "small.db", env=fips, prefix="fips-host")
        assert r.returncode == 0 and "MD5 is not available" in r.stderr, r.stderr
        r = ours("put", big, "big.db", "--part-size", "5", env=fips, prefix="fips-host")
        assert r.returncode == 0 and "3 parts of 5 MiB" in r.stderr, r.stderr
        for key, path in [("fips-host/small.db", small), ("fips-host/big.db", big)]:
            got = json.loads(sdk("sha256", key))
            assert got["sha256"] == sha(path) and got["size"] == os.path.getsize(path), (key, got)
        with open(log) as f:
            fips_puts = [ln.split()[3:] for ln in f if "/fips-host/small.db" in ln and ln.split()[1] == "PUT"]
        assert fips_puts == [["1048576", "checksum=sha256", "signed"]], fips_puts
        # Without the shim, the same process computes MD5 and sends no checksum header.
        r = ours("put", small, "small-md5.db", prefix="fips-host")
        assert r.returncode == 0 and "MD5 is not available" not in r.stderr, r.stderr

        # The other way: what the SDK wrote, through `s3 get`.
        sdk("put", "clusters/prod-1/from-sdk.db", big)
        out = os.path.join(tmp, "back.db")
        r = ours("get", "from-sdk.db", out)
        assert r.returncode == 0 and sha(out) == sha(big), r.stderr

        # More than one page of listing.
        sdk("fill", "clusters/prod-1/many/", "1005")
        r = ours("list")
        assert r.returncode == 0, r.stderr
        names = [ln.split(None, 2)[2] for ln in r.stdout.splitlines()]
        assert len(names) == 1008 and odd in names and "big.db" in names, (len(names), names[:5])
        r = ours("list", "many/")
        assert r.returncode == 0 and len(r.stdout.splitlines()) == 1005, r.stdout[-300:]

        # Delete; a missing object.
        r = ours("delete", "from-sdk.db")
        assert r.returncode == 0, r.stderr
        gone = os.path.join(tmp, "gone.db")
        r = ours("get", "from-sdk.db", gone)
        assert r.returncode == 1 and "NoSuchKey" in r.stderr, r.stderr
        assert not [p for p in os.listdir(tmp) if p.startswith("gone.db")], "a failed get left a file"

        # Garbage collection of <prefix>/v2/: full snapshots only, the newest always stays, and only
        # those this cluster signed (review M1).
        now = int(time.time())
        tiny, tar = os.path.join(tmp, "tiny"), os.path.join(tmp, "tiny.tar.gz")
        db = b"snapshot\n" * 100
        with open(tiny, "wb") as f:  # a snapshot as etcd streams it: the database, then its SHA-256
            f.write(db + hashlib.sha256(db).digest())
        with open(tar, "wb") as f:
            f.write(os.urandom(3000))

        def backup(name, key=BACKUP_KEY, sums_for=None, by_sdk=False):
            """Uploads a backup as cluster-backup lays it out: v2/NAME, its tarball and its checksum
            file (signed with `key`; none when key is False; sums_for: another name's fields)."""
            _, _, rev, created = (sums_for or name).split("-")
            sums = os.path.join(tmp, "sums.json")
            with open(sums, "w") as f:
                f.write(checksums(tiny, tar, int(rev), int(created), key=key))
            objs = [("v2/" + name, tiny), ("kuberesources/%s.tar.gz" % name, tar)]
            if key is not False:
                objs.append(("checksums/%s.json" % name, sums))
            for k, path in objs:
                if by_sdk:  # another writer of the bucket
                    sdk("put", "clusters/prod-1/" + k, path)
                else:
                    r = ours("put", path, k)
                    assert r.returncode == 0, r.stderr

        fulls = ["Full-00000000-%08d-%d" % (100 + i, now - (5 - i) * 3600) for i in range(5)]
        for n in fulls:
            backup(n)
        # Another writer of the bucket: higher revisions, unsigned, signed with another key, and our
        # own signed checksum file copied under a name that would be the newest.
        forged = ["Full-00000000-%08d-%d" % (900 + i, now - 60) for i in range(3)]
        backup(forged[0], key=False, by_sdk=True)
        backup(forged[1], key="another-clusters-key-0123456789abcdef", by_sdk=True)
        backup(forged[2], sums_for=fulls[-1], by_sdk=True)
        others = ["v2/notes.txt", "v2/Incr-00000101-00000150-%d" % now, "v2/sub/Full-00000000-00000001-1",
                  "Full-00000000-00000001-1"] + ["v2/" + n for n in forged]
        for name in others[:4]:
            r = ours("put", tiny, name)
            assert r.returncode == 0, r.stderr

        def v2():
            return sorted(json.loads(ln)["key"][len("clusters/prod-1/"):]
                          for ln in sdk("list", "clusters/prod-1/").splitlines()
                          if "/many/" not in ln and "snapshots/" not in ln and "big.db" not in ln
                          and "/kuberesources/" not in ln and "/checksums/" not in ln)

        def stored(dir):
            return sorted(json.loads(ln)["key"].split("/")[-1] for ln in sdk("list", "clusters/prod-1/%s/" % dir).splitlines())

        before = v2()
        r = ours("gc")
        assert r.returncode == 2 and "--policy" in r.stderr, r.stderr
        keyless = creds("keyless", backupKey=None)
        r = ours("gc", "--policy", "LimitBased", d=keyless)
        assert r.returncode == 2 and keyless + "/backupKey is missing" in r.stderr, r.stderr
        r = ours("gc", "--policy", "LimitBased", "--max-backups", "2", "--dry-run")
        assert r.returncode == 0 and r.stdout.count("would delete") == 3, r.stdout
        assert r.stdout.count("ignore ") == 3 and all(n in r.stderr for n in forged), (r.stdout, r.stderr)
        assert "no checksum file" in r.stderr and "not signed with this cluster's backupKey" in r.stderr, r.stderr
        assert "is for revision 104" in r.stderr, r.stderr
        assert v2() == before, "a dry run deleted something"
        r = ours("gc", "--policy", "LimitBased", "--max-backups", "2")
        assert r.returncode == 0, r.stderr
        assert v2() == sorted(["v2/" + n for n in fulls[3:]] + others), v2()
        # A deleted snapshot's checksum file and tarball went with it; the other writer's stayed.
        assert stored("checksums") == sorted(n + ".json" for n in fulls[3:] + forged[1:]), stored("checksums")
        assert stored("kuberesources") == sorted(n + ".tar.gz" for n in fulls[3:] + forged), stored("kuberesources")

        # get-backup latest: this cluster's newest, not the other writer's higher revisions.
        got = os.path.join(tmp, "got")
        r = ours("get-backup", "latest", got, d=keyless)
        assert r.returncode == 2 and "backupKey is missing" in r.stderr and not os.path.exists(got), r.stderr
        r = ours("get-backup", "latest", got)
        assert r.returncode == 0, r.stderr
        assert fulls[-1] in r.stderr and not any(n in r.stderr.split("fetching")[1] for n in forged), r.stderr
        files = sorted(os.listdir(got))
        assert [f.split("_")[0] for f in files] == ["checksums", "snapshot", "static"], files
        assert r.stdout.splitlines() == [os.path.join(got, f) for f in (files[1], files[2], files[0])], r.stdout
        with open(os.path.join(got, files[0])) as f:
            m = json.load(f)
        assert m["revision"] == "104" and m["snapshot"]["sha256"] == sha(tiny) and "hmacSHA256" in m, m
        for name in forged:
            r = ours("get-backup", name, os.path.join(tmp, "forged"))
            assert r.returncode == 1 and "is not a backup this cluster wrote" in r.stderr, r.stderr
            assert not os.path.exists(os.path.join(tmp, "forged")), "a refused backup left files"
        # A tarball changed in the store: refused against the signed checksum file, nothing left.
        sdk("put", "clusters/prod-1/kuberesources/%s.tar.gz" % fulls[-1], tiny)
        bad = os.path.join(tmp, "bad")
        r = ours("get-backup", "latest", bad)
        assert r.returncode == 1 and "the checksum file says" in r.stderr and "removed what this run fetched" in r.stderr, \
            r.stderr
        assert os.listdir(bad) == [], os.listdir(bad)
        r = ours("put", tar, "kuberesources/%s.tar.gz" % fulls[-1])
        assert r.returncode == 0, r.stderr

        # Exponential: past five weeks goes; a 3-day-old one is its day's newest; the newest stays.
        for name in ["Full-00000000-00000010-%d" % (now - 40 * 86400), "Full-00000000-00000020-%d" % (now - 3 * 86400)]:
            backup(name)
        r = ours("gc", "--policy", "Exponential")
        assert r.returncode == 0, r.stderr
        left = v2()
        assert "v2/Full-00000000-00000010-%d" % (now - 40 * 86400) not in left, left
        assert "v2/Full-00000000-00000020-%d" % (now - 3 * 86400) in left, left
        assert "v2/" + fulls[-1] in left and all(o in left for o in others), left

        # Server-side encryption: the headers on the object's creation, signed (the peer checks).
        kms = creds("kms", serverSideEncryption="aws:kms", sseKMSKeyId="alias/etcd-backups")
        r = ours("put", small, "kms.db", d=kms)
        # libcurl before 8.10.0 orders the two headers wrongly when it signs (curl #14370): refused
        # up front there, naming the file; the account's default KMS key still works.
        old_curl = r.returncode == 2 and kms + "/sseKMSKeyId needs libcurl 8.10.0" in r.stderr
        assert r.returncode == 0 or old_curl, r.stderr
        if old_curl:
            kms = creds("kms-default", serverSideEncryption="aws:kms")
            r = ours("put", small, "kms.db", d=kms)
            assert r.returncode == 0, r.stderr
        wrong = creds("sse-typo", serverSideEncryption="aes256")
        r = ours("list", d=wrong)
        assert r.returncode == 2 and wrong + "/serverSideEncryption \"aes256\"" in r.stderr, r.stderr
        sse_log = os.path.join(tmp, "sse-peer.log")
        sse_peer = subprocess.Popen(["node", "--openssl-legacy-provider", os.path.join(S3DIR, "s3-peer.js"), "--address",
                                     ADDR, "--port", "0", "--dir", os.path.join(tmp, "sse-store"), "--access-key", AK,
                                     "--secret-key", SK, "--bucket", BUCKET, "--log", sse_log, "--require-sse",
                                     "AES256"], stdout=subprocess.PIPE, text=True)
        try:
            sse_url = sse_peer.stdout.readline().split()[1]
            plain_sse = creds("sse-none", endpoint=sse_url)
            r = ours("put", small, "unencrypted.db", d=plain_sse)
            assert r.returncode == 1 and "AccessDenied" in r.stderr and "x-amz-server-side-encryption" in r.stderr, \
                r.stderr
            aes = creds("sse-aes", endpoint=sse_url, serverSideEncryption="AES256\n")
            r = ours("put", small, "single.db", d=aes)
            assert r.returncode == 0, r.stderr
            r = ours("put", big, "multi.db", "--part-size", "5", d=aes)
            assert r.returncode == 0 and "3 parts of 5 MiB" in r.stderr, r.stderr
        finally:
            sse_peer.send_signal(signal.SIGTERM)
            sse_peer.wait(timeout=10)
        with open(sse_log) as f:
            sse_lines = [ln.split()[1:] for ln in f.read().splitlines() if not ln.startswith("stopped")]
        creations = [ln for ln in sse_lines if ln[0] in ("PUT", "POST") and "partNumber=" not in ln[1]
                     and "uploadId=" not in ln[1]]
        assert [(ln[0], ln[1].split("/")[-1], ln[-2:]) for ln in creations] == [
            ("PUT", "unencrypted.db", ["1048576", "AccessDenied"]), ("PUT", "single.db", ["sse=AES256", "signed"]),
            ("POST", "multi.db?uploads=", ["sse=AES256", "signed"])], creations
        parts = [ln for ln in sse_lines if "partNumber=" in ln[1]]
        assert len(parts) == 3 and all(ln[-1] == "signed" and not any(x.startswith("sse=") for x in ln) for ln in parts), \
            parts

        # Refusals: S3's code and what to check; nothing stored.
        bad = creds("bad-secret", secretAccessKey="not-the-secret")
        r = ours("put", small, "refused.db", d=bad)
        assert r.returncode == 1 and "SignatureDoesNotMatch" in r.stderr and bad in r.stderr, r.stderr
        unknown = creds("unknown-key", accessKeyID="AKIANOBODY")
        r = ours("list", d=unknown)
        assert r.returncode == 1 and "InvalidAccessKeyId" in r.stderr, r.stderr
        r = ours("list", bucket="no-such-bucket")
        assert r.returncode == 1 and "NoSuchBucket" in r.stderr and "no-such-bucket" in r.stderr, r.stderr
        assert "refused.db" not in sdk("list", "clusters/prod-1/")

        # Usage and credential errors: exit 2, naming the file or flag.
        missing = creds("missing", secretAccessKey=None)
        r = ours("list", d=missing)
        assert r.returncode == 2 and "secretAccessKey" in r.stderr, r.stderr
        style = creds("style", s3ForcePathStyle="yes")
        r = ours("list", d=style)
        assert r.returncode == 2 and "s3ForcePathStyle" in r.stderr, r.stderr
        # Review M1: an http:// endpoint only with insecureHTTP "true"; no request is sent.
        before = open(log).read().count("\n")
        plain = creds("plain-http", insecureHTTP=None)
        for cmd in (("list",), ("put", small, "plain.db"), ("get-backup", "latest", os.path.join(tmp, "plain"))):
            r = ours(*cmd, d=plain)
            assert r.returncode == 2 and "is plain http" in r.stderr and plain + "/insecureHTTP" in r.stderr, \
                (cmd, r.stderr)
        assert open(log).read().count("\n") == before, "a request went out over plain http"
        assert not os.path.exists(os.path.join(tmp, "plain"))
        for args, needle in [(("put", small, "x", "--part-size", "4"), "--part-size"),
                             (("list",), "bucket \"A_B\""), (("frobnicate",), "frobnicate")]:
            r = ours(*args, bucket="A_B" if needle.startswith("bucket") else BUCKET)
            assert r.returncode == 2 and needle in r.stderr, (args, r.stderr)
        r = ours("list", prefix="/abs/")
        assert r.returncode == 2 and "prefix" in r.stderr, r.stderr

        # Nobody answers: retried, then named.
        dead = creds("dead", endpoint="http://%s:1" % ADDR)
        t0 = time.monotonic()
        r = ours("list", d=dead)
        assert r.returncode == 1 and "after 4 attempts" in r.stderr and ":1" in r.stderr, r.stderr
        assert time.monotonic() - t0 < 30

        # An endpoint that is truncated for ever: the same token again, or page after page.
        srv = http.server.ThreadingHTTPServer((ADDR, 0), EndlessListing)
        threading.Thread(target=srv.serve_forever, daemon=True).start()
        try:
            endless = creds("endless", endpoint="http://%s:%d" % (ADDR, srv.server_address[1]))
            r = ours("list", d=endless, bucket="loop-same")
            assert r.returncode == 1 and "the same continuation token again after 2 pages" in r.stderr, r.stderr
            EndlessListing.pages = 0
            r = ours("list", d=endless, bucket="loop-new")
            assert r.returncode == 1 and "still truncated after 1000 pages" in r.stderr, r.stderr
            assert EndlessListing.pages == 1000, EndlessListing.pages
        finally:
            srv.shutdown()
            srv.server_close()

        # The peer itself: the SDK with a wrong secret is refused; curl's own SigV4 signer is
        # accepted, and refused when the body is not the one whose hash was signed.
        r = subprocess.run(["node", os.path.join(S3DIR, "s3-client.js"), "--endpoint", endpoint, "--region",
                            "eu-west-1", "--access-key", AK, "--secret-key", "wrong", "--bucket", BUCKET, "list"],
                           capture_output=True, text=True, timeout=60)
        assert r.returncode == 1 and "SignatureDoesNotMatch" in r.stdout, r.stdout
        url = "%s/%s/conformance/curl.bin" % (endpoint, BUCKET)
        curl = ["curl", "-sS", "-o", "/dev/null", "-w", "%{http_code}", "--aws-sigv4", "aws:amz:eu-west-1:s3",
                "--user", "%s:%s" % (AK, SK), "-T", small, url]
        r = subprocess.run(curl + ["-H", "x-amz-content-sha256: " + sha(small)], capture_output=True, text=True)
        assert r.stdout == "200", (r.stdout, r.stderr)
        r = subprocess.run(curl + ["-H", "x-amz-content-sha256: " + sha(big)], capture_output=True, text=True)
        assert r.stdout == "400", (r.stdout, r.stderr)

        # purge (what a deleted Backup's grace period ends in): everything under the prefix,
        # nothing beside it (clusters/prod-10 shares the first characters), never a whole bucket.
        r = ours("put", tiny, "keep-me", prefix="clusters/prod-10")
        assert r.returncode == 0, r.stderr
        r = ours("purge", prefix=None)
        assert r.returncode == 2 and "--prefix" in r.stderr, r.stderr
        n = len(sdk("list", "clusters/prod-1/").splitlines())
        assert n > 1000, n
        r = ours("purge", "--dry-run")
        assert r.returncode == 0 and r.stdout.count("would delete") == n, r.stdout[-500:]
        assert len(sdk("list", "clusters/prod-1/").splitlines()) == n, "a dry run deleted something"
        r = ours("purge")
        assert r.returncode == 0 and r.stdout.count("delete ") == n, r.stderr
        assert sdk("list", "clusters/prod-1/").strip() == "", sdk("list", "clusters/prod-1/")
        assert len(sdk("list", "clusters/prod-10/").splitlines()) == 1
        assert len(sdk("list", "conformance/").splitlines()) == 1

        peer.send_signal(signal.SIGTERM)
        peer.wait(timeout=10)
        with open(log) as f:
            lines = f.read().splitlines()
        refused = [ln for ln in lines if ln.split()[-1] not in ("signed",) and not ln.startswith("stopped")]
        kms_put = [ln.split()[3:] for ln in lines if "/kms.db" in ln and ln.split()[1] == "PUT"]
        assert kms_put == [["1048576", "sse=aws:kms"] + ([] if old_curl else ["kms=alias/etcd-backups"]) + ["signed"]], \
            kms_put
        # Exactly the deliberate refusals; every other request was signed right.
        assert [ln.split()[-1] for ln in refused] == [
            "SignatureDoesNotMatch", "InvalidAccessKeyId", "SignatureDoesNotMatch", "XAmzContentSHA256Mismatch"], refused
        print("ok: %d requests checked by the signer" % (len(lines) - 1))
    finally:
        if peer.poll() is None:
            peer.kill()
            peer.wait()
        if os.environ.get("KEEP_TEST_DIRS", "") in ("", "0"):
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
