#!/usr/bin/env python3
"""The operator benchmark's measuring half (bench/operator-bench.sh runs it).

    operator_bench.py run --local-up TREE/hack/local-up.sh --state DIR --net 127.0.150
                          [--n 50] [--rest-wait 30] [--rest-window 60] [--pause 0.5]
                          [--json OUT.json]

1. Starts local-up (LOCAL_UP_DIR=DIR, LOCAL_UP_NET=NET) and, as soon as the
   operator's PID file appears, samples its /proc/PID/status (VmRSS, VmHWM,
   RssAnon, RssFile) and /proc/PID/stat (utime+stime) every 200 ms, until
   local-up returns (the cluster has settled) and through the phases below.
2. At rest: waits --rest-wait seconds, then measures RSS and CPU over
   --rest-window seconds.
3. API baseline: N merge patches of an annotation on Node master-1 (a
   change host-etcd-2 does not depend on), timed to a watch on that Node.
4. Reaction latency (--reaction):
   repair (the default): N merge patches of Endpoints openshift-etcd/host-etcd-2 by
   another writer (master-1 listed at a fresh address of 198.18.0.0/15), each timed
   to the already-open watch on host-etcd-2 (fieldSelector metadata.name=host-etcd-2)
   delivering the operator's rewrite (its informer sees the edit, HostEndpoints plans
   the object back, the write comes back through kube-apiserver's watch). Nothing
   moves: no member, certificate or revision depends on the edit.
   address: N merge patches of master-1's InternalIP in the Node status (a fresh
   address of 198.18.0.0/15 each time), timed to the Node watch and to host-etcd-2
   listing it. On kube-apiserver a master's new InternalIP moves its member, as it
   should: new certificates, revisions, a member re-added at an address nothing binds
   on loopback. So it is only for a cluster whose masters can really move.
5. The bootstrap breakdown from the operator's and the kubelet simulators' logs.

Everything is stdlib. Requests use one persistent HTTPS connection with the
admin kubeconfig's client certificate and CA (local-up's kube/kubeconfig). It leaves the cluster running; the shell script
stops it.
"""

import argparse
import base64
import http.client
import json
import math
import os
import queue
import re
import urllib.request
import ssl
import subprocess
import sys
import threading
import time
import urllib.parse

CLK_TCK = os.sysconf("SC_CLK_TCK")
MASTERS = ("master-0", "master-1", "master-2")


def say(msg):
    print("operator-bench: " + msg, flush=True)


# -- /proc sampling ------------------------------------------------------------------

def operator_process(pid):
    """`pid` if it is `cluster-etcd-operator operator`, else such a child of it (local-up
    starts the operator under a shell that restarts it, as its Deployment would); None."""
    def argv(p):
        with open("/proc/%d/cmdline" % p, "rb") as f:
            return f.read().split(b"\0")
    try:
        a = argv(pid)
        if a[0].endswith(b"cluster-etcd-operator") and a[1:2] == [b"operator"]:
            return pid
        with open("/proc/%d/task/%d/children" % (pid, pid)) as f:
            for c in f.read().split():
                if operator_process(int(c)):
                    return int(c)
    except (OSError, ValueError, IndexError):
        pass
    return None


def read_proc(pid):
    """(VmRSS, VmHWM, RssAnon, RssFile, RssShmem) in kB and CPU seconds, or None."""
    try:
        with open("/proc/%d/status" % pid) as f:
            st = f.read()
        with open("/proc/%d/stat" % pid) as f:
            stat = f.read()
    except OSError:
        return None
    kb = {}
    for line in st.splitlines():
        k, _, v = line.partition(":")
        if k in ("VmRSS", "VmHWM", "RssAnon", "RssFile", "RssShmem"):
            kb[k] = int(v.split()[0])
    if "VmRSS" not in kb:   # a zombie (the operator exiting, its supervisor not yet done): gone
        return None
    fields = stat[stat.rindex(")") + 2:].split()
    cpu = (int(fields[11]) + int(fields[12])) / CLK_TCK   # utime, stime (fields 14, 15)
    return kb, cpu


def shared_objects(pid):
    """The distinct shared objects PID maps, counted as bench/rss-floor counts
    its own (a path with ".so" in it), or None."""
    try:
        with open("/proc/%d/maps" % pid) as f:
            paths = {line[line.index("/"):].strip() for line in f if "/" in line}
    except OSError:
        return None
    return len({p for p in paths if ".so" in p})


def proc_start_epoch(pid):
    with open("/proc/%d/stat" % pid) as f:
        stat = f.read()
    start_ticks = int(stat[stat.rindex(")") + 2:].split()[19])   # field 22
    with open("/proc/stat") as f:
        btime = next(int(l.split()[1]) for l in f if l.startswith("btime "))
    return btime + start_ticks / CLK_TCK


def smaps_rollup(pid):
    out = {}
    try:
        with open("/proc/%d/smaps_rollup" % pid) as f:
            for line in f:
                k, _, v = line.partition(":")
                if k in ("Rss", "Pss", "Pss_Anon", "Pss_File", "Private_Clean", "Private_Dirty",
                         "Shared_Clean", "Shared_Dirty"):
                    out[k] = int(v.split()[0])
    except OSError:
        pass
    return out


class Sampler(threading.Thread):
    """Every `period` s: (wall time, kB dict, cpu s) of the operator once its PID file exists."""

    def __init__(self, pidfile, period=0.2):
        super().__init__(name="sampler", daemon=True)
        self.pidfile = pidfile
        self.period = period
        self.pid = None
        self.samples = []
        self.lock = threading.Lock()
        self.stop_ev = threading.Event()
        self.restarts = 0

    def find(self):
        """The operator's PID under local-up's supervisor now (None until it runs)."""
        while not self.stop_ev.is_set():
            try:
                with open(self.pidfile) as f:
                    pid = operator_process(int(f.read().strip() or 0))
                if pid:
                    return pid
            except (OSError, ValueError):
                pass
            time.sleep(0.02)
        return None

    def run(self):
        # An operator that exits (e.g. it lost its lease while the bootstrap member was removed)
        # is restarted by local-up's supervisor, as by its Deployment: the samples follow the
        # new process, and `restarts` counts them. The figures at rest are of the last one.
        self.pid = self.find()
        self.restarts = 0
        nxt = time.monotonic()
        while not self.stop_ev.is_set():
            r = read_proc(self.pid)
            if r is None:
                pid = self.find()
                if pid is None:
                    return
                self.pid, self.restarts = pid, self.restarts + 1
                continue
            with self.lock:
                self.samples.append((time.time(), r[0], r[1]))
            nxt += self.period
            self.stop_ev.wait(max(nxt - time.monotonic(), 0))

    def between(self, t0, t1):
        with self.lock:
            return [s for s in self.samples if t0 <= s[0] <= t1]


# -- the API server ---------------------------------------------------------------------

def read_kubeconfig(path):
    """server, CA PEM, and a token or a client certificate and key (paths) from a kubeconfig of
    the flat layout test/kube/control-plane writes."""
    kc = {}
    with open(path) as f:
        for line in f:
            k, _, v = line.strip().lstrip("- ").partition(": ")
            kc.setdefault(k, v.strip())
    server, ca = kc.get("server"), kc.get("certificate-authority-data")
    token, cert, key = kc.get("token"), kc.get("client-certificate"), kc.get("client-key")
    if not (server and ca and (token or (cert and key))):
        raise SystemExit("kubeconfig %s: no server, CA, token or client certificate" % path)
    return server, base64.b64decode(ca).decode(), token, cert, key


class Api:
    def __init__(self, kubeconfig):
        self.server, ca, self.token, cert, key = read_kubeconfig(kubeconfig)
        u = urllib.parse.urlsplit(self.server)
        self.host, self.port = u.hostname, u.port or 443
        self.ctx = ssl.create_default_context(cadata=ca)
        if cert:
            self.ctx.load_cert_chain(cert, key)
        self.conn = self.connect()

    def connect(self):
        c = http.client.HTTPSConnection(self.host, self.port, context=self.ctx, timeout=30)
        c.connect()
        return c

    def headers(self, ctype=None):
        h = {"Accept": "application/json"}
        if self.token:
            h["Authorization"] = "Bearer " + self.token
        if ctype:
            h["Content-Type"] = ctype
        return h

    def request(self, method, path, body=None, ctype=None):
        data = json.dumps(body).encode() if body is not None else None
        for attempt in (0, 1):
            try:
                self.conn.request(method, path, body=data, headers=self.headers(ctype))
                resp = self.conn.getresponse()
                out = resp.read()
                break
            except (http.client.HTTPException, OSError):
                if attempt:
                    raise
                self.conn.close()
                self.conn = self.connect()
        if resp.status >= 300:
            raise RuntimeError("%s %s: %d %s" % (method, path, resp.status, out[:300]))
        return json.loads(out)

    def get(self, path):
        return self.request("GET", path)

    def merge_patch(self, path, body):
        return self.request("PATCH", path, body, "application/merge-patch+json")


class Watch(threading.Thread):
    """An open watch; every event goes to `events` as (monotonic arrival time, type, object)."""

    def __init__(self, api, path, rv):
        super().__init__(name="watch " + path, daemon=True)
        self.api, self.path, self.rv = api, path, rv
        self.events = queue.Queue()
        self.opened = threading.Event()
        self.error = None

    def run(self):
        try:
            while True:
                c = self.api.connect()
                c.timeout = None
                c.sock.settimeout(None)
                sep = "&" if "?" in self.path else "?"
                c.request("GET", "%s%swatch=true&resourceVersion=%s&timeoutSeconds=3600" %
                          (self.path, sep, self.rv), headers=self.api.headers())
                resp = c.getresponse()
                if resp.status != 200:
                    raise RuntimeError("watch %s: %d %s" % (self.path, resp.status, resp.read()[:300]))
                self.opened.set()
                while True:
                    line = resp.readline()
                    t = time.monotonic()
                    if not line:
                        break
                    ev = json.loads(line)
                    if ev.get("type") == "ERROR":
                        raise RuntimeError("watch %s: %s" % (self.path, ev))
                    rv = (ev.get("object") or {}).get("metadata", {}).get("resourceVersion")
                    if rv:
                        self.rv = rv
                    self.events.put((t, ev["type"], ev.get("object") or {}))
                c.close()
        except Exception as e:   # the main thread sees it as a timeout and reports it
            self.error = e
            self.opened.set()

    def wait_for(self, pred, deadline):
        """The arrival time of the first queued event for which pred(obj) holds, or None."""
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            try:
                t, _typ, obj = self.events.get(timeout=left)
            except queue.Empty:
                return None
            if pred(obj):
                return t

    def drain(self):
        n = 0
        while True:
            try:
                self.events.get_nowait()
                n += 1
            except queue.Empty:
                return n


def node_ip(node):
    for a in (node.get("status") or {}).get("addresses") or []:
        if a.get("type") == "InternalIP":
            return a.get("address")
    return None


def ep_ip(ep, node_name):
    for s in ep.get("subsets") or []:
        for a in s.get("addresses") or []:
            if a.get("nodeName") == node_name:
                return a.get("ip")
    return None


def pct(xs, p):
    """Nearest-rank percentile (p99 of 50 samples is the largest)."""
    xs = sorted(x for x in xs if x is not None)
    if not xs:
        return None
    return xs[max(0, math.ceil(p / 100.0 * len(xs)) - 1)]


def stats(xs):
    xs = [x for x in xs if x is not None]
    return {"n": len(xs), "p50": pct(xs, 50), "p99": pct(xs, 99), "max": max(xs) if xs else None,
            "min": min(xs) if xs else None}


NODE = "/api/v1/nodes/master-1"
NODE_LIST = "/api/v1/nodes?fieldSelector=" + urllib.parse.quote("metadata.name=master-1")
EP = "/api/v1/namespaces/openshift-etcd/endpoints/host-etcd-2"
EP_LIST = ("/api/v1/namespaces/openshift-etcd/endpoints?fieldSelector=" +
           urllib.parse.quote("metadata.name=host-etcd-2"))


def open_watches(api):
    nrv = api.get(NODE_LIST)["metadata"]["resourceVersion"]
    erv = api.get(EP_LIST)["metadata"]["resourceVersion"]
    wn, we = Watch(api, NODE_LIST, nrv), Watch(api, EP_LIST, erv)
    for w in (wn, we):
        w.start()
        w.opened.wait(10)
        if w.error:
            raise SystemExit("watch failed: %s" % w.error)
    return wn, we


def sim_baseline(api, wn, n, pause):
    """PATCH an annotation on the Node; time the PATCH response and the Node watch event."""
    resp, seen = [], []
    for i in range(n):
        wn.drain()
        val = "%d-%d" % (os.getpid(), i)
        t0 = time.monotonic()
        api.merge_patch(NODE, {"metadata": {"annotations": {"operator-bench/seq": val}}})
        t1 = time.monotonic()
        t = wn.wait_for(lambda o: ((o.get("metadata") or {}).get("annotations") or {})
                        .get("operator-bench/seq") == val, t0 + 5)
        resp.append((t1 - t0) * 1e3)
        seen.append((t - t0) * 1e3 if t else None)
        time.sleep(pause)
    api.merge_patch(NODE, {"metadata": {"annotations": {"operator-bench/seq": None}}})
    return {"patch_response_ms": stats(resp), "node_watch_ms": stats(seen),
            "missed": sum(1 for x in seen if x is None)}


def cpu_of(pid):
    r = read_proc(pid)
    return r[1] if r else None


def wait_quiet(pid, cap, window=1.0, limit=0.05):
    """Wait (at most cap s) until the operator used at most limit CPU s in the last window s.
    Returns the CPU ms it used in the last window before returning."""
    hist = [(time.monotonic(), cpu_of(pid))]
    t_end = hist[0][0] + cap
    while True:
        time.sleep(0.1)
        now, c = time.monotonic(), cpu_of(pid)
        if c is None:
            raise SystemExit("the operator exited")
        hist.append((now, c))
        old = [h for h in hist if h[0] <= now - window]
        if old:
            used = c - old[-1][1]
            if used <= limit or now >= t_end:
                return used * 1e3


def reaction(api, wn, we, n, net, pause, pid, quiet_cap):
    """host-etcd-2 leaves loopback addresses out (Endpoints may not hold them): master-1's real
    address, in 127.0.0.0/8, is not there. Each change gives master-1 a fresh address of the
    benchmarking network 198.18.0.0/15 (RFC 2544), one nothing here binds, which it must list."""
    real = node_ip(api.get(NODE))
    cur_ep = ep_ip(api.get(EP), "master-1")
    want = None if real.startswith("127.") else real
    if cur_ep != want:
        raise SystemExit("host-etcd-2 has %s for master-1, the Node %s: not settled" % (cur_ep, real))
    rows = []
    for i in range(n):
        time.sleep(pause)
        busy = wait_quiet(pid, quiet_cap)
        # the kubelet simulator's heartbeat (every 10 s) puts its own address back: read it
        cur = node_ip(api.get(NODE))
        target = "198.18.%d.%d" % (i // 250, 1 + i % 250)
        wn.drain()
        we.drain()
        body = {"status": {"addresses": [{"type": "InternalIP", "address": target},
                                         {"type": "Hostname", "address": "master-1"}]}}
        w0 = time.time()
        t0 = time.monotonic()
        out = api.merge_patch(NODE + "/status", body)
        t1 = time.monotonic()
        if node_ip(out) != target:
            raise SystemExit("PATCH did not take: %s" % node_ip(out))
        tn = wn.wait_for(lambda o: node_ip(o) == target, t0 + 5)
        te = we.wait_for(lambda o: ep_ip(o, "master-1") == target, t0 + 10)
        superseded = False
        if te is None:   # did something (the heartbeat) change the Node again meanwhile?
            while True:
                try:
                    _t, _typ, o = wn.events.get_nowait()
                except queue.Empty:
                    break
                superseded = superseded or node_ip(o) != target
        rows.append({"i": i, "from": cur, "to": target, "wall": w0, "busy_before_ms": busy,
                     "patch_ms": (t1 - t0) * 1e3,
                     "node_ms": (tn - t0) * 1e3 if tn else None,
                     "ep_ms": (te - t0) * 1e3 if te else None, "superseded": superseded})
    if node_ip(api.get(NODE)) != real:   # leave master-1 with its own address
        wn.drain()
        we.drain()
        api.merge_patch(NODE + "/status", {"status": {"addresses": [
            {"type": "InternalIP", "address": real}, {"type": "Hostname", "address": "master-1"}]}})
        we.wait_for(lambda o: ep_ip(o, "master-1") == want, time.monotonic() + 10)
    return {"mode": "address", "real_ip": real, "rows": rows}


def ep_subsets(ep):
    return ep.get("subsets") or []


def reaction_repair(api, we, n, pause, pid, quiet_cap):
    """Another writer lists master-1 in host-etcd-2 at an address of 198.18.0.0/15; the
    operator's informer on Endpoints sees it and HostEndpoints writes the object back. Timed
    from the PATCH to the watch event carrying the operator's subsets again."""
    want = ep_subsets(api.get(EP))
    rows = []
    for i in range(n):
        time.sleep(pause)
        busy = wait_quiet(pid, quiet_cap)
        target = "198.18.%d.%d" % (i // 250, 1 + i % 250)
        we.drain()
        body = {"subsets": [{"addresses": [{"ip": target, "hostname": "master-1", "nodeName": "master-1"}],
                             "ports": [{"name": "etcd", "port": 2379, "protocol": "TCP"}]}]}
        w0 = time.time()
        t0 = time.monotonic()
        out = api.merge_patch(EP, body)
        t1 = time.monotonic()
        if ep_ip(out, "master-1") != target:
            raise SystemExit("PATCH of host-etcd-2 did not take: %s" % ep_subsets(out))
        mine = out["metadata"]["resourceVersion"]
        te_edit = we.wait_for(lambda o: o["metadata"].get("resourceVersion") == mine, t0 + 5)
        te = we.wait_for(lambda o: ep_subsets(o) == want and o["metadata"].get("resourceVersion") != mine,
                         t0 + 10)
        rows.append({"i": i, "to": target, "wall": w0, "busy_before_ms": busy, "patch_ms": (t1 - t0) * 1e3,
                     "node_ms": (te_edit - t0) * 1e3 if te_edit else None,
                     "ep_ms": (te - t0) * 1e3 if te else None, "superseded": False})
    if ep_subsets(api.get(EP)) != want:
        raise SystemExit("host-etcd-2 was not put back: %s" % ep_subsets(api.get(EP)))
    return {"mode": "repair", "rows": rows}


def reaction_stats(rx, logdir, idle_ms):
    """Latency statistics, with the operator's own timestamps from its log: the Node event
    reaching its informer ("etcd endpoints: ..." from the informer handler) and the
    HostEndpoints sync deciding the write ("updating host-etcd-2")."""
    op = read_klog(os.path.join(logdir, "operator.log"))
    # address: the Node event reaching the informer is logged ("etcd endpoints: ..."); repair:
    # the Endpoints event is not, so the decision is timed from the PATCH.
    seen_rx = re.compile(r"etcd endpoints: ") if rx.get("mode") == "address" else None
    upd_rx = re.compile(r"updating host-etcd-2")
    rows = rx["rows"]
    for k, r in enumerate(rows):
        nxt = rows[k + 1]["wall"] if k + 1 < len(rows) else None
        seen, _ = first(op, seen_rx, after=r["wall"], before=nxt) if seen_rx else (r["wall"], None)
        upd, _ = first(op, upd_rx, after=seen, before=nxt) if seen else (None, None)
        r["op_seen_ms"] = (seen - r["wall"]) * 1e3 if seen and seen_rx else None
        r["op_decided_ms"] = (upd - r["wall"]) * 1e3 if upd else None

    def col(key, rs=rows):
        return [r[key] for r in rs]

    def both(rs, f):
        return [f(r) for r in rs if r["ep_ms"] is not None and r["node_ms"] is not None]
    idle = [r for r in rows if r["busy_before_ms"] is not None and r["busy_before_ms"] <= idle_ms]
    rx.update({
        "patch_ms": stats(col("patch_ms")), "node_watch_ms": stats(col("node_ms")),
        "host_etcd_2_ms": stats(col("ep_ms")),
        "operator_share_ms": stats(both(rows, lambda r: r["ep_ms"] - r["node_ms"])),
        "operator_share_two_legs_ms": stats(both(rows, lambda r: r["ep_ms"] - 2 * r["node_ms"])),
        "idle_n": len(idle),
        "idle_host_etcd_2_ms": stats(col("ep_ms", idle)),
        "idle_operator_share_ms": stats(both(idle, lambda r: r["ep_ms"] - r["node_ms"])),
        "log_informer_ms": stats(col("op_seen_ms")),
        "log_sync_ms": stats([r["op_decided_ms"] - (r["op_seen_ms"] or 0) for r in rows
                              if r["op_decided_ms"] is not None and
                              (r["op_seen_ms"] is not None or not seen_rx)]),
        "log_write_to_watch_ms": stats([r["ep_ms"] - r["op_decided_ms"] for r in rows
                                        if r["op_decided_ms"] is not None and r["ep_ms"] is not None]),
        "missed": sum(1 for r in rows if r["ep_ms"] is None),
        "missed_superseded": sum(1 for r in rows if r["ep_ms"] is None and r["superseded"]),
    })
    return rx


# -- logs ----------------------------------------------------------------------------

KLOG = re.compile(r"^([IWEF])(\d\d)(\d\d) (\d\d):(\d\d):(\d\d)\.(\d{6})\s+\d+ \S+\] (.*)$")


def read_klog(path):
    year = time.localtime().tm_year
    out = []
    try:
        with open(path, errors="replace") as f:
            for line in f:
                m = KLOG.match(line)
                if not m:
                    continue
                mo, d, hh, mi, ss, us = (int(m.group(k)) for k in range(2, 8))
                t = time.mktime((year, mo, d, hh, mi, ss, 0, 0, -1)) + us / 1e6
                out.append((t, m.group(8)))
    except OSError:
        pass
    return out


def first(lines, rx, after=None, before=None):
    for t, msg in lines:
        if (after is None or t >= after) and (before is None or t <= before) and rx.search(msg):
            return t, msg
    return None, None


def last(lines, rx, after=None, before=None):
    hit = (None, None)
    for t, msg in lines:
        if (after is None or t >= after) and (before is None or t <= before) and rx.search(msg):
            hit = (t, msg)
    return hit


def breakdown(logdir):
    op = read_klog(os.path.join(logdir, "operator.log"))
    if not op:
        return None
    res = {"operator_first_log": op[0][0], "masters": {}}
    for m in MASTERS:
        kl = read_klog(os.path.join(logdir, "kubelet-%s.log" % m))
        q = re.escape(m)
        add_first, _ = first(op, re.compile(r"etcd add learner %s \(.*\): starting$" % q))
        add_done, _ = first(op, re.compile(r"etcd add learner %s \(.*\): (done|already done)" % q))
        prom_done, _ = first(op, re.compile(r"etcd promote %s \(.*\): (done|already done)" % q))
        # the etcd container that was running when the operator first tried to add it
        start, _ = last(kl, re.compile(r"pod openshift-etcd/etcd-%s container etcd: started" % q),
                        before=add_first)
        inst, msg = last(op, re.compile(r"installing revision \d+ on node %s " % q), before=start)
        rev = re.search(r"revision (\d+)", msg).group(1) if msg else None
        inst_exit, _ = first(kl, re.compile(r"pod openshift-etcd/installer-%s-%s container installer: exited"
                                            % (rev, q)), after=inst) if rev else (None, None)
        started_rx = re.compile(r"pod openshift-etcd/etcd-%s container etcd: started" % q)
        nxt, _ = first(kl, started_rx, after=start + 1e-6) if start else (None, None)
        ready, _ = first(kl, re.compile(r"pod openshift-etcd/etcd-%s container etcd: readiness succeeded" % q),
                         after=start, before=nxt)

        def d(a, b):
            return b - a if a is not None and b is not None else None
        res["masters"][m] = {
            "revision": rev, "installer_created": inst, "etcd_started": start,
            "add_first_attempt": add_first, "add_done": add_done, "promote_done": prom_done,
            "pod_start_s": d(inst, start), "installer_run_s": d(inst, inst_exit),
            "reaction_first_attempt_s": d(start, add_first), "reaction_s": d(start, add_done),
            "catch_up_s": d(add_done, prom_done), "etcd_ready_after_promote_s": d(prom_done, ready),
            "add_retries": sum(1 for _, msg in op if re.search(
                r"etcd add learner %s \(.*\): .*retrying shortly" % q, msg)),
        }
    first_inst, _ = first(op, re.compile(r"installing revision \d+ on node "))
    removed, _ = first(op, re.compile(r"etcd remove \S*bootstrap \(.*\): (done|already done)"))
    if removed is None:
        # The member list without it (EtcdEndpoints) when the removal's own answer was not
        # "done": seen once on 2026-11-29, "unhealthy cluster" and then the member gone.
        removed, _ = first(op, re.compile(r"bootstrap member gone and bootstrap complete"))
    co_ok, _ = first(op, re.compile(r"updating clusteroperators/etcd: Degraded=False Progressing=False "
                                    r"Available=True"), after=removed) if removed else (None, None)
    proms = [v["promote_done"] for v in res["masters"].values()]
    four = max(proms) if all(p is not None for p in proms) else None
    res.update({
        "first_installer": first_inst, "four_voters": four, "bootstrap_removed": removed,
        "to_first_installer_s": (first_inst - op[0][0]) if first_inst else None,
        "one_to_four_s": (four - first_inst) if four and first_inst else None,
        "four_to_three_s": (removed - four) if removed and four else None,
        "one_to_four_to_three_s": (removed - first_inst) if removed and first_inst else None,
        "operator_start_to_three_s": (removed - op[0][0]) if removed else None,
        "three_to_co_settled_s": (co_ok - removed) if co_ok and removed else None,
    })
    return res


def metric_sum(scrape, name):
    """Sum of a counter over all its label sets on the operator's /metrics (scrape() returns the
    text); None if unreachable."""
    try:
        text = scrape()
    except OSError:
        return None
    total, per = 0.0, {}
    for line in text.splitlines():
        if line.startswith(name + "{") or line.startswith(name + " "):
            lab = line[len(name):].rsplit(" ", 1)
            per[lab[0]] = float(lab[1])
            total += float(lab[1])
    return total, per


# An action the operator decides once: the same line twice is the same step planned twice.
# (A membership change retried after etcd's "not yet" logs "starting" again; only a second
# "done" is a duplicate.)
ACTIONS = re.compile(r"(installing revision \d+ on node \S+|node \S+ goes to revision \d+|"
                     r"revision \d+ is complete, publishing it|removing the bootstrap annotation.*|"
                     r"etcd (add learner|promote|remove) \S+.*: done|deleting finished installer pod \S+)")


def duplicate_actions(logdir, t0, t1):
    """How many action lines (ACTIONS) repeat one already seen in [t0, t1], and which."""
    seen, dups = {}, {}
    for t, msg in read_klog(os.path.join(logdir, "operator.log")):
        m = ACTIONS.search(msg) if t0 <= t <= t1 else None
        if not m:
            continue
        k = m.group(0)
        seen[k] = seen.get(k, 0) + 1
        if seen[k] > 1:
            dups[k] = seen[k]
    return sum(n - 1 for n in dups.values()), dups


def count_lines(logdir, rx, t0, t1):
    return sum(1 for t, msg in read_klog(os.path.join(logdir, "operator.log"))
               if t0 <= t <= t1 and rx.search(msg))


# -- the run -------------------------------------------------------------------------

class Perf:
    """perf record (cpu-clock, 499 Hz, no call graphs: Release has no frame pointers) on the operator."""

    def __init__(self, pid, out):
        self.out = out
        self.p = subprocess.Popen(["perf", "record", "-q", "-F", "499", "-e", "cpu-clock", "-p", str(pid),
                                   "-o", out], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def stop(self, top=15):
        self.p.send_signal(2)
        try:
            self.p.wait(30)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()
        r = subprocess.run(["perf", "report", "-i", self.out, "--stdio", "--no-children", "-q",
                            "-F", "overhead,dso,sym", "--percent-limit", "1"],
                           capture_output=True, text=True)
        lines = [l.rstrip() for l in r.stdout.splitlines() if l.strip() and not l.startswith("#")]
        return lines[:top]


def mib(kb):
    return kb / 1024.0 if kb is not None else None


def fmt(x, unit="", nd=1):
    if x is None:
        return "-"
    return ("%." + str(nd) + "f%s") % (x, unit)


def rss_floor(binary, net, state):
    """Runs bench/rss-floor (linked as the operator is) for one mTLS GET of
    the first master's etcd /health; {stage: {field: int}} or None."""
    tls = os.path.join(state, "assets", "tls")
    # 2381: the members' HTTP port (the operator's etcd client talks to it; 2379 is gRPC only).
    cmd = [binary, "https://%s.10:2381/health" % net, os.path.join(tls, "etcd-ca-bundle.crt"),
           os.path.join(tls, "etcd-client.crt"), os.path.join(tls, "etcd-client.key")]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    if p.returncode != 0:
        say("rss-floor failed (%d): %s" % (p.returncode, p.stderr.strip()))
        return None
    out = {}
    for line in p.stdout.splitlines():
        f = dict(kv.split("=", 1) for kv in line.split()[1:])
        stage = f.pop("stage")
        out[stage] = {k: int(v) for k, v in f.items()}
    status = out.get("one-request", {}).get("http")
    if status != 200:
        say("rss-floor: its GET answered %s, not 200: no floor" % status)
        return None
    return out


def cmd_run(a):
    state = os.path.abspath(a.state)
    env = dict(os.environ, LOCAL_UP_DIR=state, LOCAL_UP_NET=a.net)
    res = {"date": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "net": a.net, "n": a.n,
           "loadavg_before": open("/proc/loadavg").read().split()[:3], "nproc": os.cpu_count()}
    sampler = Sampler(os.path.join(state, "pids", "operator.pid"), 0.2)

    # 1. the bootstrap
    say("local-up (LOCAL_UP_DIR=%s LOCAL_UP_NET=%s); its output goes to %s" %
        (state, a.net, a.local_up_log))
    t_lu = time.time()
    with open(a.local_up_log, "w") as lf:
        lu = subprocess.Popen([a.local_up], env=env, stdout=lf, stderr=subprocess.STDOUT,
                              stdin=subprocess.DEVNULL)
        # local-up removes and recreates its state directory first: look for the PID file after
        time.sleep(0.5)
        sampler.start()
        rc = lu.wait()
    t_settled = time.time()
    if rc != 0:
        sampler.stop_ev.set()
        say("local-up failed (%d); its last lines:" % rc)
        sys.stdout.write("".join(open(a.local_up_log).readlines()[-20:]))
        return 1
    if sampler.pid is None:
        say("never saw the operator process")
        return 1
    pid = sampler.pid
    if sampler.restarts:
        say("the operator was restarted %d time(s) during the bootstrap (its log says why); "
            "the figures follow the newest" % sampler.restarts)
    t_start = proc_start_epoch(pid)
    boot = sampler.between(0, t_settled)
    end = boot[-1]
    res["bootstrap"] = {
        "local_up_s": t_settled - t_lu, "operator_start_to_settled_s": t_settled - t_start,
        "samples": len(boot), "peak_vmhwm_kb": end[1]["VmHWM"],
        "peak_sampled_vmrss_kb": max(s[1]["VmRSS"] for s in boot),
        "vmrss_at_settled_kb": end[1]["VmRSS"], "cpu_s": end[2],
        "cpu_share": end[2] / max(t_settled - t_start, 1e-9),
    }
    say("settled %.1f s after the operator started: peak RSS %.2f MiB, %.2f CPU s" %
        (t_settled - t_start, mib(end[1]["VmHWM"]), end[2]))
    n_dup, dups = duplicate_actions(a.logdir, t_start, t_settled)
    res["bootstrap"]["duplicate_actions"], res["bootstrap"]["duplicated"] = n_dup, dups
    # As Prometheus scrapes it: HTTPS with local-up's service CA and Prometheus's client
    # certificate, which the operator allows without a review, so the request counter below
    # counts no TokenReview or SubjectAccessReview.
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "test", "e2e"))
    import service_ca
    ca_dir = os.path.join(os.path.abspath(a.state), "service-ca")

    def metrics_url():
        return service_ca.scrape("https://%s.2:8443/metrics" % a.net, os.path.join(ca_dir, "ca.crt"),
                                 client_cert=os.path.join(ca_dir, "metrics-client-certs"), timeout=5)

    # 2. at rest
    say("at rest: waiting %d s, then measuring for %d s" % (a.rest_wait, a.rest_window))
    time.sleep(a.rest_wait)
    res["loadavg_rest"] = open("/proc/loadavg").read().split()[:3]
    perf = Perf(pid, os.path.join(a.perf, "perf-rest.data")) if a.perf else None
    m0 = metric_sum(metrics_url, "openshift_etcd_operator_controller_syncs_total")
    q0 = metric_sum(metrics_url, "openshift_etcd_operator_kube_requests_total")
    r0 = read_proc(pid)
    w0 = time.time()
    time.sleep(a.rest_window)
    r1 = read_proc(pid)
    w1 = time.time()
    m1 = metric_sum(metrics_url, "openshift_etcd_operator_controller_syncs_total")
    q1 = metric_sum(metrics_url, "openshift_etcd_operator_kube_requests_total")
    if perf:
        res["perf_rest"] = perf.stop()
    if r0 is None or r1 is None:
        say("the operator exited while at rest")
        return 1
    rest = sampler.between(w0, w1)
    rss = sorted(s[1]["VmRSS"] for s in rest)
    res["rest"] = {
        "window_s": w1 - w0, "samples": len(rest), "vmrss_min_kb": rss[0],
        "vmrss_median_kb": rss[len(rss) // 2], "vmrss_max_kb": rss[-1],
        "vmrss_end_kb": r1[0]["VmRSS"], "rssanon_end_kb": r1[0]["RssAnon"],
        "rssfile_end_kb": r1[0]["RssFile"], "rssshmem_end_kb": r1[0]["RssShmem"],
        "vmhwm_kb": r1[0]["VmHWM"], "cpu_s": r1[1] - r0[1],
        "cpu_s_per_min": (r1[1] - r0[1]) * 60.0 / (w1 - w0), "smaps_rollup_kb": smaps_rollup(pid),
        "libraries": shared_objects(pid),
        "operator_log_lines": count_lines(a.logdir, re.compile(""), w0, w1),
        "syncs_per_min": (m1[0] - m0[0]) * 60.0 / (w1 - w0) if m0 and m1 else None,
        "api_requests_per_s": (q1[0] - q0[0]) / (w1 - w0) if q0 and q1 else None,
        "syncs_per_min_by_controller": {k: (v - m0[1].get(k, 0)) * 60.0 / (w1 - w0)
                                        for k, v in m1[1].items()} if m0 and m1 else None,
    }
    say("at rest: RSS %.2f MiB (anon %.2f, file %.2f), %.3f CPU s/min" %
        (mib(r1[0]["VmRSS"]), mib(r1[0]["RssAnon"]), mib(r1[0]["RssFile"]),
         res["rest"]["cpu_s_per_min"]))

    if a.rss_floor:
        res["floor"] = rss_floor(a.rss_floor, a.net, state)
        if res["floor"]:
            say("floor: the operator's libraries and loop with one mTLS GET: RSS %.2f MiB (%.2f loaded)" %
                (mib(res["floor"]["one-request"]["vmrss_kb"]), mib(res["floor"]["loaded"]["vmrss_kb"])))

    # 3. + 4. latency
    api = Api(os.path.join(state, "kube", "kubeconfig"))
    wn, we = open_watches(api)
    time.sleep(0.5)
    say("API baseline: %d annotation patches on Node master-1" % a.n)
    res["sim_baseline"] = sim_baseline(api, wn, a.n, a.pause / 2)
    perf = Perf(pid, os.path.join(a.perf, "perf-reaction.data")) if a.perf else None
    c0, t0 = read_proc(pid), time.time()
    if a.reaction == "address":
        say("reaction: %d InternalIP changes on master-1 -> host-etcd-2" % a.n)
        res["reaction"] = reaction(api, wn, we, a.n, a.net, a.pause, pid, a.quiet_cap)
    else:
        say("reaction: %d edits of host-etcd-2 by another writer -> the operator's rewrite" % a.n)
        res["reaction"] = reaction_repair(api, we, a.n, a.pause, pid, a.quiet_cap)
    c1, t1 = read_proc(pid), time.time()
    if perf:
        res["perf_reaction"] = perf.stop()
    reaction_stats(res["reaction"], a.logdir, a.idle_ms)
    res["reaction"]["pause_s"], res["reaction"]["quiet_cap_s"] = a.pause, a.quiet_cap
    res["reaction"]["operator_cpu_s"] = c1[1] - c0[1] if c0 and c1 else None
    res["reaction"]["wall_s"] = t1 - t0
    res["reaction"]["vmrss_after_kb"] = c1[0]["VmRSS"] if c1 else None
    res["reaction"]["vmhwm_after_kb"] = c1[0]["VmHWM"] if c1 else None
    res["reaction"]["revisions_created"] = len(set(
        re.search(r"creating revision (\d+)", msg).group(1)
        for t, msg in read_klog(os.path.join(a.logdir, "operator.log"))
        if t0 <= t <= t1 and "creating revision " in msg))
    res["reaction"]["certificates_issued"] = count_lines(
        a.logdir, re.compile(r"issuing a new certificate"), t0, t1)
    res["reaction"]["installers_created"] = count_lines(
        a.logdir, re.compile(r"installing revision \d+ on node"), t0, t1)

    # 5. breakdown
    res["breakdown"] = breakdown(a.logdir)
    res["loadavg_after"] = open("/proc/loadavg").read().split()[:3]
    sampler.stop_ev.set()
    if a.json:
        with open(a.json, "w") as f:
            json.dump(res, f, indent=1)
    report(res)
    return 0


def report(res):
    b, r, sb, rx, bd = res["bootstrap"], res["rest"], res["sim_baseline"], res["reaction"], res["breakdown"]
    print()
    print("== operator-bench: %s, %d cores, load average %s before, %s at rest, %s after" %
          (res["date"], res["nproc"], " ".join(res["loadavg_before"]), " ".join(res.get("loadavg_rest", ["-"])),
           " ".join(res["loadavg_after"])))
    print()
    print("%-58s %s" % ("bootstrap (operator start -> settled)", fmt(b["operator_start_to_settled_s"], " s")))
    print("%-58s %s" % ("  peak RSS (VmHWM)", fmt(mib(b["peak_vmhwm_kb"]), " MiB", 2)))
    print("%-58s %s" % ("  peak RSS (sampled VmRSS, 200 ms)", fmt(mib(b["peak_sampled_vmrss_kb"]), " MiB", 2)))
    print("%-58s %s" % ("  CPU (utime+stime)", "%.2f s (%.1f%% of one core)" % (b["cpu_s"], 100 * b["cpu_share"])))
    print("%-58s %s" % ("  duplicate actions (the same step logged twice)", "%d %s" % (
        b["duplicate_actions"], ", ".join("%s x%d" % kv for kv in sorted(b["duplicated"].items())))))
    print("%-58s %s" % ("at rest (%.0f s window)" % r["window_s"], ""))
    print("%-58s %s" % ("  RSS min / median / max", "%s / %s / %s" % (
        fmt(mib(r["vmrss_min_kb"]), " MiB", 2), fmt(mib(r["vmrss_median_kb"]), " MiB", 2),
        fmt(mib(r["vmrss_max_kb"]), " MiB", 2))))
    print("%-58s %s" % ("  RSS at end: anon / file / shmem", "%s / %s / %s" % (
        fmt(mib(r["rssanon_end_kb"]), " MiB", 2), fmt(mib(r["rssfile_end_kb"]), " MiB", 2),
        fmt(mib(r["rssshmem_end_kb"]), " MiB", 2))))
    sm = r.get("smaps_rollup_kb") or {}
    if sm.get("Pss") is not None:
        print("%-58s %s" % ("  PSS (smaps_rollup)", fmt(mib(sm["Pss"]), " MiB", 2)))
    print("%-58s %s" % ("  CPU per minute", "%.3f s/min (%.2f%% of one core)" % (
        r["cpu_s_per_min"], r["cpu_s_per_min"] / 60 * 100)))
    if r.get("api_requests_per_s") is not None:
        print("%-58s %s" % ("  API requests per second (from /metrics)", fmt(r["api_requests_per_s"], "", 3)))
    if r.get("syncs_per_min") is not None:
        print("%-58s %s" % ("  syncs per minute (all controllers, from /metrics)", fmt(r["syncs_per_min"], "", 1)))
        for k, v in sorted(r["syncs_per_min_by_controller"].items(), key=lambda kv: -kv[1]):
            if v > 0:
                print("%-58s %s" % ("    " + k, fmt(v, "", 1)))
    print()
    print("latency, ms (N=%d; p99 is nearest-rank, so with 50 samples the largest)" % res["n"])
    print("%-58s %8s %8s %8s %6s" % ("", "p50", "p99", "max", "n"))

    def row(name, s):
        print("%-58s %8s %8s %8s %6d" % (name, fmt(s["p50"]), fmt(s["p99"]), fmt(s["max"]), s["n"]))
    row("API: annotation PATCH -> response", sb["patch_response_ms"])
    row("API: annotation PATCH -> Node watch event", sb["node_watch_ms"])
    if rx.get("mode") == "repair":
        row("edit of host-etcd-2: PATCH -> response", rx["patch_ms"])
        row("edit: PATCH -> its own watch event (API round trip)", rx["node_watch_ms"])
        row("edit: PATCH -> the operator's rewrite on the watch", rx["host_etcd_2_ms"])
        row("operator share = rewrite - edit event", rx["operator_share_ms"])
        row("operator share, both API legs = rewrite - 2 x edit", rx["operator_share_two_legs_ms"])
    else:
        row("IP change: PATCH -> response", rx["patch_ms"])
        row("IP change: PATCH -> Node watch event (API round trip)", rx["node_watch_ms"])
        row("IP change: PATCH -> host-etcd-2 watch event", rx["host_etcd_2_ms"])
        row("operator share = host-etcd-2 - Node event", rx["operator_share_ms"])
        row("operator share, both API legs = host-etcd-2 - 2 x Node", rx["operator_share_two_legs_ms"])
    if "idle_n" in rx:
        row("  changes made on an idle operator: host-etcd-2 event", rx["idle_host_etcd_2_ms"])
        row("  changes made on an idle operator: operator share", rx["idle_operator_share_ms"])
        print("operator log timestamps (wall clock, same machine):")
        if rx.get("mode") == "repair":
            row("  PATCH -> HostEndpoints decides (\"updating host-etcd-2\")", rx["log_sync_ms"])
        else:
            row("  PATCH -> operator's Node informer (\"etcd endpoints:\")", rx["log_informer_ms"])
            row("  informer -> HostEndpoints decides (\"updating host-etcd-2\")", rx["log_sync_ms"])
        row("  decision -> host-etcd-2 watch event (write + API)", rx["log_write_to_watch_ms"])
    print("missed host-etcd-2 events: %d baseline, %d reaction (%s superseded by another Node change); "
          "during the %d changes (%.0f s) the operator used %.2f CPU s, issued %d certificates, created %d "
          "revisions and %d installers" % (
              sb["missed"], rx["missed"], rx.get("missed_superseded", "-"), res["n"], rx.get("wall_s", 0),
              rx["operator_cpu_s"] or 0, rx["certificates_issued"], rx["revisions_created"],
              rx["installers_created"]))
    if "idle_n" in rx:
        print("changes: at least %.1f s apart, each after the operator went quiet (<= 50 ms CPU in 1 s, at most "
              "%.0f s wait); %d of %d were made on an idle operator (<= idle threshold)" % (
                  rx["pause_s"], rx["quiet_cap_s"], rx["idle_n"], len(rx["rows"])))
    if bd:
        print()
        print("bootstrap breakdown, s (from the operator and kubelet-sim logs)")
        print("%-10s %4s %10s %10s %10s %10s %10s %10s %7s" % (
            "master", "rev", "pod start", "installer", "reaction", "(1st try)", "catch-up", "ready+", "retries"))
        for m, v in bd["masters"].items():
            print("%-10s %4s %10s %10s %10s %10s %10s %10s %7d" % (
                m, v["revision"] or "-", fmt(v["pod_start_s"], "", 2), fmt(v["installer_run_s"], "", 2),
                fmt(v["reaction_s"], "", 2), fmt(v["reaction_first_attempt_s"], "", 2),
                fmt(v["catch_up_s"], "", 2), fmt(v["etcd_ready_after_promote_s"], "", 2), v["add_retries"]))
        print("  pod start: installer created -> etcd container started; installer: its run; reaction:")
        print("  container started -> add learner done (1st try: first attempt); catch-up: add -> promote;")
        print("  ready+: promote -> kubelet readiness succeeded")
        print("%-58s %s" % ("operator start -> first installer", fmt(bd["to_first_installer_s"], " s", 2)))
        print("%-58s %s" % ("1 -> 4 (first installer -> last promote)", fmt(bd["one_to_four_s"], " s", 2)))
        print("%-58s %s" % ("4 -> 3 (last promote -> bootstrap removed)", fmt(bd["four_to_three_s"], " s", 2)))
        print("%-58s %s" % ("1 -> 4 -> 3 total", fmt(bd["one_to_four_to_three_s"], " s", 2)))
        print("%-58s %s" % ("operator start -> bootstrap removed", fmt(bd["operator_start_to_three_s"], " s", 2)))
        print("%-58s %s" % ("bootstrap removed -> clusteroperator settled (rollout)",
                            fmt(bd.get("three_to_co_settled_s"), " s", 2)))
    for key, title in (("perf_rest", "at rest"), ("perf_reaction", "during the changes")):
        if res.get(key):
            print()
            print("perf (cpu-clock, 499 Hz, self time by library and symbol) %s:" % title)
            for line in res[key]:
                print("  " + line)
    print()
    fl = res.get("floor")
    if fl:
        print("floor: bench/rss-floor, linked as the operator is (ceo-core, %d shared objects), its loop and" %
              fl["loaded"]["libraries"])
        print("       one mTLS GET, nothing else: RSS %.2f MiB loaded, %.2f MiB after the request "
              "(anon %.2f, file %.2f)" % (mib(fl["loaded"]["vmrss_kb"]), mib(fl["one-request"]["vmrss_kb"]),
                                          mib(fl["one-request"]["rss_anon_kb"]),
                                          mib(fl["one-request"]["rss_file_kb"])))
    p99 = rx["operator_share_ms"]["p99"]
    # Issue 11 restated the resting-memory targets from the floor: RSS at most 1.25x what the
    # libraries cost after one request, anonymous memory at most 4 MiB (three masters).
    if fl and fl["loaded"]["libraries"] != r.get("libraries"):
        # A floor without some of the operator's libraries is no floor for it (nor one with more).
        print("target: RSS at rest <= 1.25x the floor: NOT COMPARABLE (the floor maps %d shared objects, "
              "the operator %s) (%.2f MiB)" % (fl["loaded"]["libraries"], r.get("libraries"),
                                              mib(r["vmrss_end_kb"])))
    elif fl:
        limit_kb = 1.25 * fl["one-request"]["vmrss_kb"]
        print("target: RSS at rest <= 1.25x the floor (%.2f MiB) with three masters: %s (%.2f MiB)" % (
            mib(limit_kb), "MET" if r["vmrss_end_kb"] <= limit_kb else "NOT MET", mib(r["vmrss_end_kb"])))
    else:
        print("target: RSS at rest <= 1.25x the floor: NO FLOOR MEASURED (%.2f MiB)" % mib(r["vmrss_end_kb"]))
    anon_kb = r.get("rssanon_end_kb")
    if anon_kb is not None:
        print("target: anonymous memory at rest <= 4 MiB: %s (%.2f MiB)" % (
            "MET" if anon_kb <= 4 * 1024 else "NOT MET", mib(anon_kb)))
    if p99 is None:
        print("target: operator reaction p99 <= 20 ms: NO DATA")
    else:
        what = "rewrite - edit event" if rx.get("mode") == "repair" else "host-etcd-2 - Node event"
        print("target: operator reaction p99 <= 20 ms: %s (%.1f ms, %s; end to end %.1f ms)" % (
            "MET" if p99 <= 20 else "NOT MET", p99, what, rx["host_etcd_2_ms"]["p99"]))
    own = rx.get("log_sync_ms", {}).get("p99")
    if own is not None:
        start = "PATCH sent" if rx.get("mode") == "repair" else "Node event in its informer"
        print("        of which up to the decision (%s -> HostEndpoints decided, write sent): p99 %.1f ms; "
              "the rest is the write through kube-apiserver and its watch" % (start, own))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("--local-up", required=True, help="the hack/local-up.sh to run")
    r.add_argument("--state", required=True, help="LOCAL_UP_DIR")
    r.add_argument("--net", default="127.0.150", help="LOCAL_UP_NET")
    r.add_argument("--local-up-log", required=True)
    r.add_argument("--n", type=int, default=50)
    r.add_argument("--rest-wait", type=int, default=30)
    r.add_argument("--rest-window", type=int, default=60)
    r.add_argument("--pause", type=float, default=0.5, help="at least this many s between changes")
    r.add_argument("--quiet-cap", type=float, default=5.0,
                   help="before each change, wait up to this many s for the operator to go quiet "
                        "(<= 50 ms CPU in the last second)")
    r.add_argument("--idle-ms", type=float, default=50.0,
                   help="a change counts as made on an idle operator when it used at most this many "
                        "CPU ms in the second before")
    r.add_argument("--perf", metavar="DIR", help="perf record the operator at rest and during the changes")
    r.add_argument("--rss-floor", metavar="BIN", help="bench/rss-floor to run beside the at-rest figures")
    r.add_argument("--reaction", choices=("repair", "address"), default="repair",
                   help="what the reaction phase changes (see the top of this file)")
    r.add_argument("--json")
    p = sub.add_parser("report", help="print the table of an earlier run's JSON")
    p.add_argument("json")
    a = ap.parse_args()
    if a.cmd == "report":
        with open(a.json) as f:
            report(json.load(f))
        return 0
    a.logdir = os.path.join(os.path.abspath(a.state), "logs")
    return cmd_run(a)


if __name__ == "__main__":
    sys.exit(main())
