#!/usr/bin/env python3
"""e2e: the whole bootstrap of test_bootstrap.py while the API server is
hostile (issue 15's fault profile), with the writer and the invariant watcher:
- every 2 s every open watch ends, cleanly and by connection reset in turn;
- every 3 s a burst of three 409 Conflicts on PUT and PATCH in openshift-etcd,
  never two in a row for one object (a conflict stands for another writer's
  change, which reading again gets past: with the cluster quiet, a clean-clone
  run's single writer of etcd-all-certs, retrying every 10 s, met a fresh 409
  77 times in a row, and the bootstrap never went on), and of three 429 with
  Retry-After on GET there (watches included);
- every 5 s a 503 on a create there;
- every 15 s etcd is compacted (watches and lists from before get 410);
- every 4 s a write of the operator's (PUT and PATCH in turn, to its
  ConfigMaps, Secrets and Endpoints there or etcds/cluster) is carried out
  but answered with 504 Timeout, as kube-apiserver answers one that "may
  still be processing the request".
Where the faults come from: test/kube/api-fault-proxy in front of Kubernetes'
own kube-apiserver, for the operator alone: its kubeconfig names the proxy
(Env.start_fault_proxy), while the
kubelets, kubectl and the test's reads go to kube-apiserver directly; the
fault actor drives the proxy's control API and compacts etcd itself through
its gateway (/v3/kv/compaction). The counts (API requests, writes) are then
the operator's alone.
The bootstrap must complete as a calm one does (three voters, the bootstrap
member removed, clusteroperator/etcd settled at the release's versions),
with no membership change while a voter is unhealthy, every acknowledged
write readable at the end, no write of the operator sent more than 3
times in a row to one object once the server had carried it out (counted
from the writes log; a burst replaces the last one's unmet faults), and none
sent again right after its answer was lost: the operator reads the object
back first and plans from what the server has.

Usage: test_chaos.py BUILD_DIR [--calm]
With --calm, the same bootstrap without faults (bench/chaos-bench.sh runs
both and compares the figures each prints: settle time, API requests); the
calm run goes through the proxy too, so both count alike."""
import base64
import http.client
import json
import os
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from e2e import Env, log, wait_for  # noqa: E402
from scenario import Cluster, start_actors, stop_actors  # noqa: E402

TIMEOUT = int(os.environ.get("E2E_BOOTSTRAP_TIMEOUT", "600"))
OPERATOR_AGENT = "cluster-etcd-operator/"
MAX_IDENTICAL_IN_A_ROW = 3
STORAGE_OUTAGE_S = 15  # how long a compaction is sent again while etcd refuses it
OPERATOR_WRITES = r"/namespaces/openshift-etcd/(configmaps|secrets|endpoints)/|/etcds/cluster"


class ProxyControls:
    """test/kube/api-fault-proxy's control API (on a loopback port of its own); compaction is
    etcd's own."""

    def __init__(self, env, cluster):
        host, port = env.fault_proxy["control"][len("http://"):].rsplit(":", 1)
        self.addr = (host, int(port))
        self.cluster = cluster

    def call(self, method, path, body=None):
        c = http.client.HTTPConnection(*self.addr, timeout=30)
        try:
            c.request(method, path, body=None if body is None else json.dumps(body))
            r = c.getresponse()
            answer = r.read()
        finally:
            c.close()
        if r.status != 200:
            raise AssertionError("fault proxy: %s %s: HTTP %d %s" % (method, path, r.status, answer[:200]))
        return json.loads(answer)

    def post(self, path, body, method="POST"):
        self.call(method, path, body)

    def get(self, path):
        return self.call("GET", path)

    def compact(self):
        """etcd compacted at its current revision, through its gateway (as the proxy's own
        /compact does); sent again for up to STORAGE_OUTAGE_S while every member refuses it
        (one restarting while the rest elect a leader). A revision compacted already (by
        kube-apiserver's own compaction meanwhile) is done."""
        c = self.cluster
        etcd = c.client()
        eps = c.master_eps + [e for e in c.endpoints() if e not in c.master_eps]  # the bootstrap member last
        key = base64.b64encode(b"/e2e-chaos/compact").decode()
        deadline = time.monotonic() + STORAGE_OUTAGE_S
        while True:
            try:
                # At the revision of the member that answered, by that member.
                ep, j = etcd.first(eps, "/v3/kv/range", {"key": key, "count_only": True})
                rev = int(j["header"]["revision"])
                status, j = etcd.call(ep, "/v3/kv/compaction", {"revision": str(rev)})
                if status == 200 or "required revision has been compacted" in json.dumps(j):
                    return
                why = "%s: HTTP %d %s" % (ep, status, json.dumps(j))
            except (OSError, http.client.HTTPException) as e:
                why = str(e)
            if time.monotonic() >= deadline:
                raise AssertionError("compacting etcd: %s" % why)
            log("compacting etcd: %.200s; sending it again" % why)
            time.sleep(0.5)


class FaultProfile(threading.Thread):
    def __init__(self, controls):
        super().__init__(daemon=True)
        self.controls = controls
        self.stop = threading.Event()
        self.error = None
        self.counts = {"drops": 0, "bursts": 0, "compactions": 0, "lost_answers": 0}

    def run(self):
        t0, abort = time.monotonic(), False
        next_drop, next_burst, next_503, next_compact, next_lost = 2.0, 3.0, 5.0, 15.0, 4.0
        lost_method = "PUT"
        ns = "/namespaces/openshift-etcd/"
        post = self.controls.post
        try:
            while not self.stop.wait(0.25):
                t = time.monotonic() - t0
                if t >= next_drop:
                    post("/drop-watches", {"abort": abort})
                    abort, next_drop = not abort, next_drop + 2
                    self.counts["drops"] += 1
                if t >= next_burst:
                    # A burst replaces the last one's leftovers: faults no request met do not
                    # pile up into a server that refuses every write.
                    post("/faults", None, method="DELETE")
                    for method in ("PUT", "PATCH"):
                        post("/faults", {"method": method, "path_regex": ns, "code": 409, "count": 3,
                                         "not_twice": True})
                    post("/faults", {"method": "GET", "path_regex": ns, "code": 429, "count": 3, "retry_after": 1})
                    next_burst += 3
                    self.counts["bursts"] += 1
                if t >= next_503:
                    post("/faults", {"method": "POST", "path_regex": ns, "code": 503, "count": 1})
                    next_503 += 5
                if t >= next_lost:
                    # On what only the operator writes (the kubelets' pod status writes would
                    # take most of them otherwise).
                    post("/faults", {"method": lost_method, "path_regex": OPERATOR_WRITES, "code": 504,
                                     "count": 1, "after": True})
                    lost_method = "PATCH" if lost_method == "PUT" else "PUT"
                    next_lost += 4
                    self.counts["lost_answers"] += 1
                if t >= next_compact:
                    self.controls.compact()
                    next_compact += 15
                    self.counts["compactions"] += 1
        except Exception as e:  # noqa: BLE001 - reported by the test
            self.error = e


def identical_runs(writes):
    """The longest run of identical operator writes (method, body) to one object that the
    server had already carried out (a write refused with 409 or 503 must be sent again), and
    where; and the writes sent again right after one whose answer was lost (carried out,
    answered 504), as "METHOD path" strings."""
    best, where, last, resent = 0, None, {}, []
    for w in writes:
        if not w.get("agent", "").startswith(OPERATOR_AGENT):
            continue
        path = w["path"].split("?")[0]
        key = (w["method"], w["digest"])
        prev = last.get(path)
        same = prev and prev[0] == key and prev[2]
        run = prev[1] + 1 if same else 1
        if same and prev[3]:
            resent.append("%s %s" % (w["method"], path))
        served = w.get("served", w.get("code")) or 0
        last[path] = (key, run, 200 <= served < 300, served != (w.get("code") or 0))
        if run > best:
            best, where = run, "%s %s" % (w["method"], path)
    return best, where, resent


def main():
    build, calm = sys.argv[1], "--calm" in sys.argv[2:]
    with Env(build) as env:
        c = Cluster(env).start()
        env.start_fault_proxy()  # before the operator's first start: its kubeconfig names the proxy
        controls = ProxyControls(env, c)
        watcher, writer = c.actors()
        faults = FaultProfile(controls)
        start_actors(watcher, writer)
        st0 = controls.get("/stats")
        first_write = (controls.get("/writes")["writes"] or [{"seq": 0}])[-1]["seq"] + 1
        t0 = time.monotonic()
        sup = c.supervise_operator()  # as its Deployment: restarted if it steps down
        if not calm:
            faults.start()
        try:
            wait_for("EtcdRunningInCluster=True", lambda: faults.error is None and c.running_in_cluster(), TIMEOUT)
            assert faults.error is None, faults.error
            c.complete_bootstrap()
            c.wait_for_ceo(TIMEOUT)
            wait_for("the bootstrap annotation to go", c.bootstrap_annotation_gone, 120)
            c.destroy_bootstrap()
            c.wait_settled(TIMEOUT)
            settle = time.monotonic() - t0
        finally:
            faults.stop.set()
            if faults.is_alive():
                faults.join(10)
            stop_actors(watcher, writer)
        assert faults.error is None, faults.error
        st1 = controls.get("/stats")
        writes = controls.get("/writes?since=%d" % first_write)["writes"]
        verbs = {v: st1["requests"].get(v, 0) - st0["requests"].get(v, 0) for v in st1["requests"]}
        requests = st1["total"] - st0["total"] - verbs.get("sim", 0)  # not the fault actor's own
        rewatches = verbs.get("watch", 0)
        run, where, resent = identical_runs(writes)
        lost = [w for w in writes if w.get("agent", "").startswith(OPERATOR_AGENT)
                and w.get("served", w.get("code")) != w.get("code")]
        log("FIGURES %s%s: settled in %.0f s; %d API requests (%.1f/s), %d of them watches (%.1f/s without); "
            "%d operator writes; longest run of identical operator writes to one object after it was "
            "accepted: %d (%s); answers lost after the write: %d, sent again right after: %d; "
            "operator restarts: %d; faults: %s, %d injected; by verb: %s" % (
                "calm" if calm else "chaos",
                " (kube-apiserver; requests and writes: the operator's, through the fault proxy)",
                settle, requests, requests / settle, rewatches,
                (requests - rewatches) / settle,
                sum(1 for w in writes if w.get("agent", "").startswith(OPERATOR_AGENT)), run, where,
                len(lost), len(resent), sup.restarts, faults.counts, st1["injected"] - st0["injected"],
                json.dumps(verbs, sort_keys=True)))

        assert not watcher.violations, "invariants broken: %s" % watcher.violations[:5]
        assert c.member_names() == c.masters, c.member_names()
        c.check_writer(writer)
        assert run <= MAX_IDENTICAL_IN_A_ROW, "the operator sent an identical write %d times in a row (%s)" % (
            run, where)
        assert not resent, "sent again right after its answer was lost: %s" % resent
        if not calm:
            assert faults.counts["drops"] > 10 and faults.counts["compactions"] >= 1, faults.counts
            assert lost, "no operator write met a lost answer (the fault profile did not bite)"
        log("ok")


if __name__ == "__main__":
    main()
