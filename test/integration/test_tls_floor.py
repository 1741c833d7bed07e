#!/usr/bin/env python3
"""TLS 1.2 is our floor, whatever the host's OpenSSL policy allows (review L5).

A server that speaks only TLS 1.1 (openssl s_server), and a client policy
(OPENSSL_CONF) lowered to allow TLS 1.0 and security level 0, as a host
may have it: the etcd client (the event loop's HTTP, here through `verify
backup-storage`) and the S3 client (`s3 list`) must both refuse the
handshake ("protocol version"), not talk TLS 1.1.
Usage: test_tls_floor.py BINARY"""
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time

BIN = sys.argv[1]
LOOSE = """openssl_conf = default_conf
[default_conf]
ssl_conf = ssl_sect
[ssl_sect]
system_default = system_default_sect
[system_default_sect]
MinProtocol = TLSv1
CipherString = DEFAULT@SECLEVEL=0
"""


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def main():
    if not shutil.which("openssl"):
        sys.exit("openssl is missing: run hack/install-deps.sh")
    tmp = tempfile.mkdtemp(prefix="test-tls-floor-")
    server = None
    try:
        crt, key, conf = (os.path.join(tmp, n) for n in ("crt", "key", "loose.cnf"))
        subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
                        "-nodes", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
                        "-keyout", key, "-out", crt, "-days", "1"], check=True, capture_output=True)
        with open(conf, "w") as f:
            f.write(LOOSE)
        port = free_port()
        server = subprocess.Popen(["openssl", "s_server", "-accept", "127.0.0.1:%d" % port, "-cert", crt,
                                   "-key", key, "-tls1_1", "-cipher", "DEFAULT@SECLEVEL=0", "-www"],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                  env=dict(os.environ, OPENSSL_CONF=conf))
        for _ in range(100):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.1)
        env = dict(os.environ, OPENSSL_CONF=conf)
        url = "https://127.0.0.1:%d" % port

        r = subprocess.run([BIN, "verify", "backup-storage", "--backup-dir", tmp, "--endpoints", url,
                            "--cacert", crt, "--cert", crt, "--key", key, "--timeout", "1s", "-v=4"],
                           capture_output=True, text=True, timeout=60, env=env)
        assert r.returncode == 1 and "alert protocol version" in r.stderr, r.stderr[-2000:]

        creds = os.path.join(tmp, "creds")
        os.makedirs(creds)
        for k, v in {"accessKeyID": "AK", "secretAccessKey": "SK", "endpoint": url, "s3ForcePathStyle": "true"
                     }.items():
            with open(os.path.join(creds, k), "w") as f:
                f.write(v)
        shutil.copy(crt, os.path.join(creds, "caBundle"))
        r = subprocess.run([BIN, "s3", "list", "--credentials-dir", creds, "--bucket", "bkt"],
                           capture_output=True, text=True, timeout=60, env=env)
        assert r.returncode == 1 and "alert protocol version" in r.stderr, r.stderr[-2000:]
        print("ok: neither client talks TLS 1.1, even where OpenSSL's policy allows it")
    finally:
        if server and server.poll() is None:
            server.kill()
            server.wait()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
