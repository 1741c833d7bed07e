#!/usr/bin/env python3
"""The console dashboard manifests/operator/0000_90_cluster-etcd-operator_01-dashboards.yaml
(ctest: unit/dashboards).

- the object: ConfigMap openshift-config-managed/grafana-dashboard-etcd, label
  console.openshift.io/dashboard "true" (what the console selects), the payload's profile
  annotations;
- the dashboard: JSON with a title and uid, panels with unique ids, grid positions inside the
  24 columns that do not overlap, each with a description and at least one query, each query
  with a unique refId;
- every query is valid PromQL: all of them, as recording rules, pass `promtool check rules`;
- every metric a query names exists: etcd's are read from the /metrics of a real two-member
  etcd (Debian's etcd-server, on loopback, so that the peer metrics exist too), the operator's
  from the names it registers (operator/process/operator.c, operator/runtime/etcd-metrics.c);
  `up` is Prometheus' own.

promtool and etcd come from hack/install-deps.sh; a machine without them fails here.
"""

import json
import os
import random
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "test", "sim"))
from kubeletsim import yaml_lite  # noqa: E402  (the tree's stdlib-only YAML loader)

MANIFEST = os.path.join(ROOT, "manifests", "operator", "0000_90_cluster-etcd-operator_01-dashboards.yaml")
OPERATOR_SOURCES = [os.path.join(ROOT, p) for p in ("operator/process/operator.c", "operator/runtime/etcd-metrics.c")]
PROMETHEUS_OWN = {"up"}


def fail(msg):
    print("unit/dashboards: " + msg, file=sys.stderr)
    sys.exit(1)


def check_object(doc):
    if (doc.get("apiVersion"), doc.get("kind")) != ("v1", "ConfigMap"):
        fail("not a v1 ConfigMap: %r %r" % (doc.get("apiVersion"), doc.get("kind")))
    md = doc.get("metadata") or {}
    if (md.get("namespace"), md.get("name")) != ("openshift-config-managed", "grafana-dashboard-etcd"):
        fail("metadata is %r, not openshift-config-managed/grafana-dashboard-etcd" % md)
    if (md.get("labels") or {}).get("console.openshift.io/dashboard") != "true":
        fail("no label console.openshift.io/dashboard: \"true\" (the console selects dashboards by it)")
    ann = md.get("annotations") or {}
    for p in ("self-managed-high-availability", "single-node-developer"):
        if ann.get("include.release.openshift.io/" + p) != "true":
            fail("no include.release.openshift.io/%s annotation: the CVO would skip it" % p)
    data = doc.get("data") or {}
    if list(data) != ["etcd.json"]:
        fail("data keys %s, want etcd.json" % sorted(data))
    try:
        return json.loads(data["etcd.json"])
    except ValueError as e:
        fail("etcd.json is not JSON: %s" % e)


def check_panels(dash):
    """The layout and each panel's queries; returns [(panel title, refId, expr)]."""
    for k in ("title", "uid", "panels"):
        if not dash.get(k):
            fail("dashboard has no %s" % k)
    ids, cells, queries = set(), {}, []
    for p in dash["panels"]:
        t = p.get("title") or fail("a panel without a title: %r" % p.get("id"))
        if p.get("id") in ids:
            fail("panel id %r twice" % p.get("id"))
        ids.add(p.get("id"))
        if not p.get("description"):
            fail("panel %r has no description (what it shows and what to do)" % t)
        g = p.get("gridPos") or {}
        x, y, w, h = (g.get(k) for k in ("x", "y", "w", "h"))
        if not all(isinstance(v, int) for v in (x, y, w, h)) or w <= 0 or h <= 0 or x < 0 or x + w > 24:
            fail("panel %r: gridPos %r is not inside the 24 columns" % (t, g))
        for cx in range(x, x + w):
            for cy in range(y, y + h):
                if (cx, cy) in cells:
                    fail("panels %r and %r overlap at (%d, %d)" % (cells[(cx, cy)], t, cx, cy))
                cells[(cx, cy)] = t
        refs = set()
        for q in p.get("targets") or fail("panel %r has no query" % t):
            if not q.get("expr") or q.get("refId") in refs:
                fail("panel %r: a query without an expr, or refId %r twice" % (t, q.get("refId")))
            refs.add(q["refId"])
            queries.append((t, q["refId"], q["expr"]))
    return queries


def check_promql(queries, tmp):
    """Every query as a recording rule: promtool parses and checks them all."""
    rules = {"groups": [{"name": "dashboard", "rules": [
        {"record": "dashboard:query_%d" % i, "expr": e} for i, (_, _, e) in enumerate(queries)]}]}
    path = os.path.join(tmp, "dashboard-queries.json")
    with open(path, "w") as f:
        json.dump(rules, f)
    p = subprocess.run(["promtool", "check", "rules", path], capture_output=True, text=True)
    if p.returncode != 0:
        fail("promtool check rules on the dashboard's queries:\n%s%s" % (p.stdout, p.stderr))


def free_port(host):
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def etcd_metric_names(tmp):
    """The metric names of a real two-member etcd's /metrics, after a write (so the request
    counters have values) and its first peer round trip (so the prober's histogram has one)."""
    host = "127.%d.%d.%d" % (random.randint(20, 250), random.randint(1, 250), random.randint(1, 250))
    ports = {n: {k: free_port(host) for k in ("client", "peer", "metrics")} for n in ("a", "b")}
    cluster = ",".join("%s=http://%s:%d" % (n, host, p["peer"]) for n, p in ports.items())
    procs = []
    try:
        for n, p in ports.items():
            log = open(os.path.join(tmp, "etcd-%s.log" % n), "w")
            procs.append(subprocess.Popen([
                "etcd", "--name", n, "--data-dir", os.path.join(tmp, "etcd-" + n),
                "--listen-client-urls", "http://%s:%d" % (host, p["client"]),
                "--advertise-client-urls", "http://%s:%d" % (host, p["client"]),
                "--listen-peer-urls", "http://%s:%d" % (host, p["peer"]),
                "--initial-advertise-peer-urls", "http://%s:%d" % (host, p["peer"]),
                "--listen-metrics-urls", "http://%s:%d" % (host, p["metrics"]),
                "--initial-cluster", cluster, "--initial-cluster-state", "new"],
                stdout=log, stderr=subprocess.STDOUT))
        client = "http://%s:%d" % (host, ports["a"]["client"])
        deadline = time.monotonic() + 30
        while True:
            try:
                body = json.dumps({"key": "ZGFzaGJvYXJk", "value": "dGVzdA=="}).encode()
                urllib.request.urlopen(urllib.request.Request(client + "/v3/kv/put", data=body), timeout=2).read()
                break
            except OSError:
                if time.monotonic() > deadline:
                    fail("the two-member etcd did not take a write within 30 s (logs in %s)" % tmp)
                time.sleep(0.3)
        # The peer prober observes its first round trip some seconds after the start.
        deadline = time.monotonic() + 20
        while True:
            text = urllib.request.urlopen("http://%s:%d/metrics" % (host, ports["a"]["metrics"]),
                                          timeout=5).read().decode()
            if "etcd_network_peer_round_trip_time_seconds_bucket" in text or time.monotonic() > deadline:
                break
            time.sleep(0.5)
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
    return {m.group(1) for m in re.finditer(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)[{ ]", text, re.M)}


def operator_metric_names():
    names = set()
    for path in OPERATOR_SOURCES:
        with open(path, encoding="utf-8") as f:
            names |= set(re.findall(r'"(openshift_etcd_operator_[a-z0-9_]+)"', f.read()))
    if not names:
        fail("no openshift_etcd_operator_* names in %s" % OPERATOR_SOURCES)
    return names


def used_metrics(expr):
    """The metric names an expression selects: a name before a {selector}, or one of ours."""
    found = set(re.findall(r"([a-zA-Z_:][a-zA-Z0-9_:]*)\{", expr))
    found |= set(re.findall(r"\b(openshift_etcd_operator_[a-z0-9_]+)\b", expr))
    return found - {"by", "without", "on", "ignoring"}


def main():
    for tool in ("promtool", "etcd"):
        if not shutil.which(tool):
            fail("%s is missing (hack/install-deps.sh installs it)" % tool)
    with open(MANIFEST, encoding="utf-8") as f:
        docs = [d for d in yaml_lite.load_all(f.read()) if d]
    if len(docs) != 1:
        fail("%d documents in %s, want one" % (len(docs), MANIFEST))
    dash = check_object(docs[0])
    queries = check_panels(dash)
    tmp = tempfile.mkdtemp(prefix="unit-dashboards-")
    try:
        check_promql(queries, tmp)
        known = etcd_metric_names(tmp) | operator_metric_names() | PROMETHEUS_OWN
        for title, ref, expr in queries:
            used = used_metrics(expr)
            if not used:
                fail("panel %r query %s names no metric this check can see: %s" % (title, ref, expr))
            for m in sorted(used - known):
                fail("panel %r query %s: no metric %s in etcd's /metrics or the operator's" % (title, ref, m))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("unit/dashboards: %d panels, %d queries: valid PromQL, every metric exported" % (
        len(dash["panels"]), len(queries)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
