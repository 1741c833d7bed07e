#!/usr/bin/env python3
"""Conformance of test/kube/api-fault-proxy, the API faults of e2e/chaos in front of Kubernetes'
own kube-apiserver. On an etcd and a control plane of its own (test_control_plane.py's), with
a ServiceAccount token as the operator's credentials, it checks through the proxy that:
- the token passes through (kube-apiserver names the ServiceAccount), over HTTP/1.1 (ALPN);
- a watch streams events as they happen; ended cleanly it gets the terminating chunk and its
  connection serves the next request; ended by reset its read fails with ECONNRESET; a new
  watch then works, and one the client closes is noticed (no open watch left);
- 409, 429 (Retry-After, a watch among them) and 503 bursts are answered `count` times with
  kube-apiserver's Status and nothing reaches the server (read back directly), then requests
  pass;
- an `after` fault lets kube-apiserver carry the write out (read back directly) while the
  client gets 504 Timeout;
- DELETE /faults drops the pending faults;
- the writes log holds every write with its body's SHA-256, the code sent and the one served,
  from `since` on; the stats count the requests by verb and the faults injected;
- with --sim-in-band the same controls answer under /sim/ on the TLS port (a 403 fault posted
  there is injected); /sim/latency holds every request; /sim/compact compacts etcd (a read
  there at an older revision is refused).
Usage: test_fault_proxy.py"""
import hashlib
import http.client
import json
import os
import socket
import ssl
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from test_control_plane import in_world, log, start_control_plane, start_fault_proxy, wait_for  # noqa: E402

NS = "chaos"
AGENT = "fault-proxy-test/1"


class Conn:
    """One HTTP/1.1 connection to the proxy, parsed by hand: a watch's chunks are seen as sent."""

    def __init__(self, addr, ca, token):
        ctx = ssl.create_default_context(cafile=ca)
        ctx.set_alpn_protocols(["h2", "http/1.1"])
        self.sock = ctx.wrap_socket(socket.create_connection(addr, timeout=15), server_hostname=addr[0])
        self.alpn = self.sock.selected_alpn_protocol()
        self.rfile = self.sock.makefile("rb")
        self.token = token

    def close(self):
        self.rfile.close()
        self.sock.close()

    def send(self, method, path, body=None, content_type="application/json"):
        data = b"" if body is None else json.dumps(body).encode()
        head = "%s %s HTTP/1.1\r\nHost: proxy\r\nAuthorization: Bearer %s\r\nUser-Agent: %s\r\n" \
               "Accept: application/json\r\n" % (method, path, self.token, AGENT)
        if body is not None:
            head += "Content-Type: %s\r\nContent-Length: %d\r\n" % (content_type, len(data))
        self.sock.sendall(head.encode() + b"\r\n" + data)
        return data

    def head(self):
        line = self.rfile.readline()
        assert line.startswith(b"HTTP/1.1 "), line
        headers = {}
        while True:
            h = self.rfile.readline().decode().rstrip("\r\n")
            if not h:
                break
            k, _, v = h.partition(":")
            headers[k.strip().lower()] = v.strip()
        return int(line.split()[1]), headers

    def chunk(self):
        """The next chunk's data; b"" for the terminating chunk."""
        size = int(self.rfile.readline().split(b";")[0], 16)
        if size == 0:
            assert self.rfile.readline() == b"\r\n"
            return b""
        data = self.rfile.read(size)
        assert self.rfile.readline() == b"\r\n"
        return data

    def call(self, method, path, body=None, content_type="application/json"):
        """(status, headers, parsed body, the body's bytes sent)."""
        sent = self.send(method, path, body, content_type)
        status, headers = self.head()
        if headers.get("transfer-encoding") == "chunked":
            data = b""
            while True:
                c = self.chunk()
                if not c:
                    break
                data += c
        else:
            data = self.rfile.read(int(headers.get("content-length") or 0))
        try:
            return status, headers, json.loads(data), sent
        except ValueError:
            return status, headers, data, sent

    def events(self, want, timeout=20):
        """Watch events until one satisfies want(event); that event."""
        self.sock.settimeout(timeout)
        buf = b""
        while True:
            c = self.chunk()
            assert c, "the watch ended before the event came"
            buf += c
            while b"\n" in buf:
                line, buf = buf.split(b"\n", 1)
                ev = json.loads(line)
                if want(ev):
                    return ev


class Control:
    def __init__(self, url):
        host, port = url[len("http://"):].rsplit(":", 1)
        self.addr = (host, int(port))

    def call(self, method, path, body=None):
        c = http.client.HTTPConnection(*self.addr, timeout=10)
        try:
            c.request(method, path, body=None if body is None else json.dumps(body))
            r = c.getresponse()
            out = json.loads(r.read())
            assert r.status == 200, "%s %s: %d %s" % (method, path, r.status, out)
            return out
        finally:
            c.close()


def main():
    in_world(run)


def start_proxy(w, kdir, etcd_url):
    pdir = start_fault_proxy(w, kdir, etcd_url)
    url = open(os.path.join(pdir, "url")).read().strip()
    host, port = url[len("https://"):].rsplit(":", 1)
    return (host, int(port)), Control(open(os.path.join(pdir, "control-url")).read().strip())


def run(w):
    kdir, admin, etcd_url, _ = start_control_plane(w, kas_node_names="")
    ca = os.path.join(kdir, "ca.crt")
    addr, ctl = start_proxy(w, kdir, etcd_url)
    kubectl = lambda *a, **kw: w.kubectl(admin, *a, **kw)  # noqa: E731 - straight to kube-apiserver
    direct = lambda name: json.loads(kubectl("-n", NS, "get", "configmap", name, "-o", "json").stdout)  # noqa: E731

    kubectl("create", "namespace", NS)
    kubectl("-n", NS, "create", "serviceaccount", "probe")
    kubectl("-n", NS, "create", "rolebinding", "probe-edit", "--clusterrole=edit", "--serviceaccount=%s:probe" % NS)
    token = kubectl("-n", NS, "create", "token", "probe").stdout.strip()
    kubectl("-n", NS, "create", "configmap", "base", "--from-literal=v=0")
    c = Conn(addr, ca, token)
    cms = "/api/v1/namespaces/%s/configmaps" % NS

    # The token passes through; HTTP/1.1 only.
    assert c.alpn == "http/1.1", c.alpn
    st, _, who, _ = c.call("POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews",
                           {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"})
    assert st == 201 and who["status"]["userInfo"]["username"] == "system:serviceaccount:%s:probe" % NS, (st, who)
    st, _, lst, _ = wait_for("RBAC to let the ServiceAccount list", lambda: (lambda r: r if r[0] == 200 else None)(
        c.call("GET", cms)), 30)
    rv = lst["metadata"]["resourceVersion"]
    log("through the proxy as %s over %s" % (who["status"]["userInfo"]["username"], c.alpn))

    # A watch, ended cleanly: the terminating chunk, then its connection serves the next request.
    c.send("GET", "%s?watch=true&resourceVersion=%s" % (cms, rv))
    st, h = c.head()
    assert st == 200 and h.get("transfer-encoding") == "chunked", (st, h)
    kubectl("-n", NS, "create", "configmap", "w1", "--from-literal=k=1")
    ev = c.events(lambda e: e["object"]["metadata"]["name"] == "w1")
    assert ev["type"] == "ADDED", ev
    wait_for("one open watch", lambda: ctl.call("GET", "/stats")["openWatches"] == 1, 10)
    assert ctl.call("POST", "/drop-watches", {"abort": False}) == {"dropped": 1}
    c.sock.settimeout(10)
    while True:  # events already on their way come first
        data = c.chunk()
        if not data:
            break
        log("before the end: %s" % data[:80])
    st, _, obj, _ = c.call("GET", cms + "/w1")
    assert st == 200 and obj["data"] == {"k": "1"}, (st, obj)
    log("watch ended cleanly (terminating chunk); its connection served the next request")

    # Ended by reset: ECONNRESET.
    r = Conn(addr, ca, token)
    r.send("GET", "%s?watch=true&resourceVersion=%s" % (cms, obj["metadata"]["resourceVersion"]))
    assert r.head()[0] == 200
    wait_for("one open watch", lambda: ctl.call("GET", "/stats")["openWatches"] == 1, 10)
    assert ctl.call("POST", "/drop-watches", {"abort": True}) == {"dropped": 1}
    # Python's TLS layer reads a reset as EOF: the socket itself says which it was.
    raw = socket.socket(fileno=os.dup(r.sock.fileno()))
    raw.settimeout(10)
    try:
        while raw.recv(65536):
            pass  # TLS records sent before the end
        raise AssertionError("the watch's connection was closed (FIN), not reset")
    except ConnectionResetError:
        pass
    except TimeoutError:
        raise AssertionError("the watch's connection was neither reset nor closed within 10 s")
    finally:
        raw.close()
        r.close()
    log("watch ended by connection reset")

    # A new watch works; one its client closes is noticed.
    n = Conn(addr, ca, token)
    n.send("GET", "%s?watch=true&resourceVersion=%s" % (cms, obj["metadata"]["resourceVersion"]))
    assert n.head()[0] == 200
    kubectl("-n", NS, "create", "configmap", "w3", "--from-literal=k=3")
    assert n.events(lambda e: e["object"]["metadata"]["name"] == "w3")["type"] == "ADDED"
    n.close()
    wait_for("the closed watch noticed", lambda: ctl.call("GET", "/stats")["openWatches"] == 0, 10)
    log("a new watch streams; one its client closed is gone from the proxy")

    st0 = ctl.call("GET", "/stats")
    first = (ctl.call("GET", "/writes")["writes"] or [{"seq": 0}])[-1]["seq"] + 1

    # 409 on PUT, three times, none carried out; then it passes.
    before = direct("base")
    ctl.call("POST", "/faults", {"method": "PUT", "path_regex": "/namespaces/%s/" % NS, "code": 409, "count": 3})
    put = dict(before, data={"v": "1"})
    for i in range(3):
        st, _, out, put_body = c.call("PUT", cms + "/base", put)
        assert st == 409 and out["reason"] == "Conflict" and out["details"] == {"name": "base", "kind": "configmaps"}, \
            (i, st, out)
    assert direct("base")["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]
    st, _, out, _ = c.call("PUT", cms + "/base", put)
    assert st == 200 and direct("base")["data"] == {"v": "1"}, (st, out)
    log("409 x3 refused before kube-apiserver, then the PUT passed")

    # 429 with Retry-After on GET, a watch among them; then it passes.
    ctl.call("POST", "/faults", {"method": "GET", "path_regex": "/namespaces/%s/" % NS, "code": 429, "count": 3,
                                 "retry_after": 1})
    for path in ("%s?watch=true&resourceVersion=%s" % (cms, rv), cms, cms + "/base"):
        st, h, out, _ = c.call("GET", path)
        assert st == 429 and h.get("retry-after") == "1" and out["reason"] == "TooManyRequests" and \
            out["details"] == {"retryAfterSeconds": 1}, (path, st, h, out)
    assert c.call("GET", cms + "/base")[0] == 200
    log("429 x3 with Retry-After: 1 (a watch among them), then the GET passed")

    # 503 on a create: not created; then it is.
    ctl.call("POST", "/faults", {"method": "POST", "path_regex": "/namespaces/%s/" % NS, "code": 503, "count": 1})
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c503"}, "data": {"k": "v"}}
    st, _, out, _ = c.call("POST", cms, cm)
    assert st == 503 and out["reason"] == "ServiceUnavailable", (st, out)
    r = kubectl("-n", NS, "get", "configmap", "c503", check=False)
    assert r.returncode != 0 and "NotFound" in r.stderr, r.stderr
    st, _, out, post_body = c.call("POST", cms, cm)
    assert st == 201, (st, out)
    log("503 on the create, nothing created; then it was")

    # `after`: carried out, answered 504.
    kubectl("-n", NS, "create", "configmap", "late", "--from-literal=k=before")
    ctl.call("POST", "/faults", {"method": "PATCH", "path_regex": "/configmaps/late", "code": 504, "count": 1,
                                 "after": True})
    st, _, out, patch_body = c.call("PATCH", cms + "/late", {"data": {"k": "after"}},
                                    content_type="application/merge-patch+json")
    assert st == 504 and out["reason"] == "Timeout" and out["message"].startswith("Timeout: "), (st, out)
    assert direct("late")["data"] == {"k": "after"}, direct("late")
    assert c.call("PATCH", cms + "/late", {"data": {"k": "again"}}, content_type="application/merge-patch+json")[0] \
        == 200
    log("the PATCH was carried out by kube-apiserver while the client got 504 Timeout")

    # DELETE /faults: nothing pending is injected any more.
    ctl.call("POST", "/faults", {"method": "GET", "path_regex": "/namespaces/%s/" % NS, "code": 503, "count": 5})
    assert ctl.call("DELETE", "/faults") == {"faults": []} and ctl.call("GET", "/faults") == {"faults": []}
    assert c.call("GET", cms + "/base")[0] == 200

    # The writes log and the stats.
    writes = ctl.call("GET", "/writes?since=%d" % first)["writes"]
    seen = [(x["method"], x["path"], x["code"], x["served"]) for x in writes]
    want = [("PUT", cms + "/base", 409, 409)] * 3 + [("PUT", cms + "/base", 200, 200), ("POST", cms, 503, 503),
                                                     ("POST", cms, 201, 201), ("PATCH", cms + "/late", 504, 200),
                                                     ("PATCH", cms + "/late", 200, 200)]
    assert seen == want, seen
    digest = lambda b: hashlib.sha256(b).hexdigest()  # noqa: E731
    assert [x["digest"] for x in writes[:4]] == [digest(put_body)] * 4, writes[:4]
    assert writes[5]["digest"] == digest(post_body) and writes[6]["digest"] == digest(patch_body), writes[5:7]
    assert all(x["agent"] == AGENT for x in writes), writes
    assert [x["seq"] for x in writes] == list(range(first, first + len(want))), writes
    assert ctl.call("GET", "/writes?since=%d" % writes[-1]["seq"])["writes"] == writes[-1:]
    st1 = ctl.call("GET", "/stats")
    d = {v: st1["requests"].get(v, 0) - st0["requests"].get(v, 0) for v in st1["requests"]}
    assert st1["injected"] - st0["injected"] == 3 + 3 + 1 + 1, (st0, st1)
    assert d.get("update") == 4 and d.get("create") == 2 and d.get("patch") == 2 and d.get("watch") == 1 and \
        d.get("list") == 1 and d.get("get") == 3, d
    assert st1["total"] - st0["total"] == sum(d.values()) == 13, (st0, st1)
    assert st0["requests"].get("watch") == 3 and st0["watchesTotal"] == 3, st0
    log("writes log and stats: %s" % json.dumps(d, sort_keys=True))

    # not_twice: a burst of 409s never meets two requests in a row for one object, whatever is
    # left of it; other objects still meet what is left.
    ctl.call("POST", "/faults", {"method": "PUT", "path_regex": "/namespaces/%s/" % NS, "code": 409, "count": 3,
                                 "not_twice": True})
    put = dict(direct("base"), data={"v": "2"})
    st, _, out, _ = c.call("PUT", cms + "/base", put)
    assert st == 409, (st, out)
    st, _, out, _ = c.call("PUT", cms + "/base", put)
    assert st == 200 and direct("base")["data"] == {"v": "2"}, (st, out)
    other = direct("w3")
    st, _, out, _ = c.call("PUT", cms + "/w3", dict(other, data={"k": "4"}))
    assert st == 409, (st, out)
    assert [f["count"] for f in ctl.call("GET", "/faults")["faults"]] == [1]
    ctl.call("DELETE", "/faults")
    log("not_twice: the second PUT of base passed with faults left; another object met one")
    in_band(w, etcd_url, c, ctl, cms, kubectl)
    c.close()


def in_band(w, etcd_url, c, ctl, cms, kubectl):
    """--sim-in-band: the controls on the TLS port, under /sim/; latency; compaction."""
    st, _, out, _ = c.call("POST", "/sim/faults", {"method": "GET", "path_regex": "/configmaps/base$", "code": 403})
    assert st == 200 and out["faults"][0]["code"] == 403, (st, out)
    st, _, out, _ = c.call("GET", cms + "/base")
    assert st == 403 and out["reason"] == "Forbidden", (st, out)
    assert c.call("GET", cms + "/base")[0] == 200
    st, _, out, _ = c.call("GET", "/sim/stats")
    assert st == 200 and out == ctl.call("GET", "/stats"), out  # in band: not counted itself
    log("in band: a 403 posted to /sim/faults through the TLS port was injected")

    assert c.call("POST", "/sim/latency", {"ms": 800})[2] == {"ms": 800}
    t0 = time.monotonic()
    assert c.call("GET", cms + "/base")[0] == 200
    held = time.monotonic() - t0
    assert c.call("POST", "/sim/latency", {"ms": 0})[2] == {"ms": 0}
    assert held >= 0.8, held
    log("/sim/latency held a GET %.2f s" % held)

    # Compacted in etcd itself: a read there at an older revision is refused. (kube-apiserver's
    # watch cache goes on serving lists and watches at that revision from its own history.)
    old = int(json.loads(kubectl("-n", NS, "get", "configmap", "base", "-o", "json").stdout)["metadata"][
        "resourceVersion"])
    kubectl("-n", NS, "create", "configmap", "after-compact", "--from-literal=k=1")
    st, _, out, _ = c.call("POST", "/sim/compact", {})
    assert st == 200 and out["revision"] > old, (st, out)
    rev = out["revision"]
    pki = os.path.join(w.dir, "etcd-pki")
    ctx = ssl.create_default_context(cafile=os.path.join(pki, "ca.crt"))
    ctx.load_cert_chain(os.path.join(pki, "client.crt"), os.path.join(pki, "client.key"))
    host, port = etcd_url[len("https://"):].rsplit(":", 1)
    e = http.client.HTTPSConnection(host, int(port), timeout=10, context=ctx)
    e.request("POST", "/v3/kv/range", body=json.dumps({"key": "Lw==", "revision": str(old)}))
    got = e.getresponse().read().decode()
    e.close()
    assert "required revision has been compacted" in got, got
    log("/sim/compact compacted etcd at %d: etcd refuses a read at %d" % (rev, old))


if __name__ == "__main__":
    main()
