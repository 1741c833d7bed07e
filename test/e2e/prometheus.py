"""OpenShift's monitoring over a scenario's cluster, with Debian's real Prometheus: the harness
plays prometheus-operator and cluster-monitoring-operator (neither runs here), from the objects
the cluster holds, not from copies of ours:

- every ServiceMonitor of the collection profile "full" (or none) becomes a scrape job as
  prometheus-operator writes one, its targets the endpoints of the Services it selects (the
  Service's labels matched, the port by name, ready or not), with the labels
  prometheus-operator gives them (namespace, service, pod, endpoint, job from `jobLabel`),
  the TLS material its tlsConfig names read from the ConfigMaps and Secrets it names (a
  caFile inside Prometheus's pod mapped to the harness's service CA), its bearer token file,
  its metricRelabelings, and its scrape class as cluster-monitoring-operator defines them
  (tls-client-certificate-auth: Prometheus's client certificate, service_ca.metrics_client_cert,
  added to the endpoint's tlsConfig). Debian builds Prometheus without Kubernetes discovery, so the
  harness discovers: it reads the Services and pods with prometheus-k8s's token, so the
  Roles we ship must let Prometheus read them, and writes them as static targets;
- every PrometheusRule's groups become a rule file, with two changes said aloud: each `for` is
  cut to FOR so that an alert fires within a test, and each 2-minute range to RANGE so that
  etcdMembersDown (whose peer send failures stay in a 2-minute rate for 2 minutes after the
  member is back) resolves within 30 s; the rules as shipped, with their own `for` and
  ranges, are promtool's tests (test/monitoring).

Prometheus listens on the world's address .4."""
import base64
import json
import os
import shutil
import subprocess
import time
import urllib.parse
import urllib.request

from e2e import log, wait_for

PROFILE = "full"
FOR = "15s"
RANGE = "30s"
PORT = 9090
IN_POD_SERVICE_CA = "/etc/prometheus/configmaps/serving-certs-ca-bundle/service-ca.crt"
IN_POD_TOKEN = "/var/run/secrets/kubernetes.io/serviceaccount/token"
# cluster-monitoring-operator's scrape classes: what each adds to an endpoint's tlsConfig.
CLIENT_CERT_CLASS = "tls-client-certificate-auth"


def _relabel(r):
    """A ServiceMonitor relabeling (camelCase) as a Prometheus relabel_config."""
    keys = {"sourceLabels": "source_labels", "targetLabel": "target_label", "action": "action",
            "regex": "regex", "replacement": "replacement", "separator": "separator", "modulus": "modulus"}
    return {keys[k]: v for k, v in r.items() if k in keys}


class Prometheus:
    def __init__(self, c, processes=None):
        """`processes`: {(namespace, service): address} of what runs as a process here where a
        Deployment's pod would (the operator): the Service's endpoint is that address."""
        self.c, self.env = c, c.env
        self.processes = processes or {}
        self.dir = os.path.join(self.env.dir, "prometheus")
        os.makedirs(self.dir, exist_ok=True)
        self.url = "http://%s:%d" % (self.env.ip(4), PORT)
        self.proc = None

    # --- what prometheus-operator would mount and write ---------------------------------

    def _file(self, name, data):
        path = os.path.join(self.dir, name)
        with open(path, "w") as f:
            f.write(data)
        os.chmod(path, 0o600)
        return path

    def _ref(self, ns, ref, what):
        """The text a tlsConfig reference names: {configMap: {name, key}} or {secret: {...}}."""
        if "configMap" in ref:
            cm = self.env.get_json("configmap", "-n", ns, ref["configMap"]["name"])
            assert cm, "%s: configmap %s/%s missing" % (what, ns, ref["configMap"]["name"])
            return cm["data"][ref["configMap"]["key"]]
        sec = ref.get("secret", ref)  # keySecret is the secret selector itself
        s = self.env.get_json("secret", "-n", ns, sec["name"])
        assert s, "%s: secret %s/%s missing" % (what, ns, sec["name"])
        return base64.b64decode(s["data"][sec["key"]]).decode()

    def _tls(self, ns, job, tls):
        out = {}
        if tls.get("caFile"):
            assert tls["caFile"] == IN_POD_SERVICE_CA, "%s: caFile %s is no file the harness knows" % (
                job, tls["caFile"])
            out["ca_file"] = self.c.service_ca
        if "ca" in tls:
            out["ca_file"] = self._file(job + "-ca.crt", self._ref(ns, tls["ca"], job))
        if "cert" in tls:
            out["cert_file"] = self._file(job + "-client.crt", self._ref(ns, tls["cert"], job))
        if "keySecret" in tls:
            out["key_file"] = self._file(job + "-client.key", self._ref(ns, tls["keySecret"], job))
        if tls.get("serverName"):
            out["server_name"] = tls["serverName"]
        if tls.get("insecureSkipVerify"):
            out["insecure_skip_verify"] = True
        return out

    def _kubeconfig(self, token_file):
        """Discovery as prometheus-k8s: its token against the API server."""
        admin = json.loads(self.env.kubectl("config", "view", "--raw", "--minify", "-o", "json").stdout)
        cluster = admin["clusters"][0]["cluster"]
        return self._file("kubeconfig", json.dumps({
            "apiVersion": "v1", "kind": "Config", "current-context": "prometheus",
            "clusters": [{"name": "c", "cluster": {"server": cluster["server"],
                                                    "certificate-authority-data":
                                                        cluster["certificate-authority-data"]}}],
            "users": [{"name": "prometheus-k8s", "user": {"tokenFile": token_file}}],
            "contexts": [{"name": "prometheus", "context": {"cluster": "c", "user": "prometheus-k8s"}}]}))

    def _as_prometheus(self, kubeconfig, *args):
        r = subprocess.run([self.env.kubectl_bin, "--kubeconfig", kubeconfig] + list(args),
                           capture_output=True, text=True)
        assert r.returncode == 0, "kubectl %s as prometheus-k8s: %s" % (" ".join(args), r.stderr.strip())
        return json.loads(r.stdout)

    def _targets(self, kubeconfig, spec, ep, namespaces):
        """[(address, labels)] of the endpoints the ServiceMonitor selects, as prometheus-operator's
        relabeling leaves them. Kubernetes refuses loopback addresses in Endpoints and
        EndpointSlices, and every node here lives on 127.0.0.0/8, so the endpoints come from what
        kube-controller-manager's endpoints controller would put there: the pods the Service
        selects (ready or not), at its port's targetPort. Read with prometheus-k8s's token."""
        want = (spec.get("selector") or {}).get("matchLabels") or {}
        out = []
        for ns in namespaces:
            pods = self._as_prometheus(kubeconfig, "-n", ns, "get", "pods", "-o", "json")["items"]
            for svc in self._as_prometheus(kubeconfig, "-n", ns, "get", "services", "-o", "json")["items"]:
                labels = svc["metadata"].get("labels") or {}
                sel = svc["spec"].get("selector") or {}
                if not sel or any(labels.get(k) != v for k, v in want.items()):
                    continue
                port = next((p for p in svc["spec"].get("ports") or [] if p.get("name") == ep["port"]), None)
                if not port:
                    continue
                job = labels.get(spec.get("jobLabel") or "", "") or svc["metadata"]["name"]
                proc = self.processes.get((ns, svc["metadata"]["name"]))
                if proc:
                    target = port.get("targetPort", port["port"])
                    assert isinstance(target, int), "%s: a named targetPort for a process" % svc["metadata"]["name"]
                    out.append(("%s:%d" % (proc, target), {
                        "namespace": ns, "service": svc["metadata"]["name"], "pod": "(process)",
                        "endpoint": ep["port"], "job": job}))
                    continue
                for pod in pods:
                    plabels = pod["metadata"].get("labels") or {}
                    ip = (pod.get("status") or {}).get("podIP")
                    if not ip or any(plabels.get(k) != v for k, v in sel.items()) or \
                            (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
                        continue
                    target = port.get("targetPort", port["port"])
                    if isinstance(target, str):  # a named container port
                        target = next((cp["containerPort"] for c in pod["spec"]["containers"]
                                       for cp in c.get("ports") or [] if cp.get("name") == target), None)
                    if target is None:
                        continue
                    out.append(("%s:%d" % (ip, target), {
                        "namespace": ns, "service": svc["metadata"]["name"], "pod": pod["metadata"]["name"],
                        "endpoint": ep["port"], "job": job}))
        return sorted(out, key=lambda t: t[0])

    def scrape_configs(self, token_file, kubeconfig):
        sms = json.loads(self.env.kubectl("get", "servicemonitors.monitoring.coreos.com", "-A", "-o",
                                          "json").stdout)["items"]
        jobs = []
        for sm in sorted(sms, key=lambda o: (o["metadata"]["namespace"], o["metadata"]["name"])):
            md, spec = sm["metadata"], sm["spec"]
            profile = (md.get("labels") or {}).get("monitoring.openshift.io/collection-profile")
            if profile not in (None, PROFILE):
                continue
            namespaces = (spec.get("namespaceSelector") or {}).get("matchNames") or [md["namespace"]]
            for i, ep in enumerate(spec["endpoints"]):
                name = "serviceMonitor/%s/%s/%d" % (md["namespace"], md["name"], i)
                fname = name.replace("/", "_")
                targets = self._targets(kubeconfig, spec, ep, namespaces)
                assert targets, "%s selects no endpoint" % name
                job = {"job_name": name, "scheme": ep.get("scheme", "http"),
                       "metrics_path": ep.get("path", "/metrics"),
                       "static_configs": [{"targets": [a], "labels": labels} for a, labels in targets],
                       # The job label is the target's (prometheus-operator relabels it so).
                       "honor_labels": False}
                if ep.get("tlsConfig"):
                    job["tls_config"] = self._tls(md["namespace"], fname, ep["tlsConfig"])
                scrape_class = spec.get("scrapeClass")
                if scrape_class:
                    assert scrape_class == CLIENT_CERT_CLASS, "%s: scrape class %s is not one OpenShift's " \
                        "Prometheus has" % (name, scrape_class)
                    job.setdefault("tls_config", {}).update({
                        "cert_file": os.path.join(self.c.prometheus_cert, "tls.crt"),
                        "key_file": os.path.join(self.c.prometheus_cert, "tls.key")})
                if ep.get("bearerTokenFile"):
                    assert ep["bearerTokenFile"] == IN_POD_TOKEN, "%s: bearerTokenFile %s" % (
                        name, ep["bearerTokenFile"])
                    job["authorization"] = {"credentials_file": token_file}
                if ep.get("metricRelabelings"):
                    job["metric_relabel_configs"] = [_relabel(r) for r in ep["metricRelabelings"]]
                jobs.append(job)
        return jobs

    def rule_files(self):
        prs = json.loads(self.env.kubectl("get", "prometheusrules.monitoring.coreos.com", "-A", "-o",
                                          "json").stdout)["items"]
        files = []
        for pr in prs:
            groups = pr["spec"]["groups"]
            for g in groups:
                for r in g["rules"]:
                    if "for" in r:
                        r["for"] = FOR
                    r["expr"] = r["expr"].replace("[2m]", "[%s]" % RANGE)
            files.append(self._file("rules-%s-%s.yaml" % (pr["metadata"]["namespace"], pr["metadata"]["name"]),
                                    json.dumps({"groups": groups})))
        return files

    def start(self):
        token_file = self._file("token", self.c.prometheus_token)
        kubeconfig = self._kubeconfig(token_file)
        jobs = self.scrape_configs(token_file, kubeconfig)
        rules = self.rule_files()
        assert jobs and rules, (jobs, rules)
        cfg = self._file("prometheus.yml", json.dumps({
            "global": {"scrape_interval": "5s", "scrape_timeout": "4s", "evaluation_interval": "5s"},
            "rule_files": rules, "scrape_configs": jobs}, indent=1))
        r = subprocess.run(["promtool", "check", "config", cfg], capture_output=True, text=True)
        assert r.returncode == 0, "promtool check config: %s%s" % (r.stdout, r.stderr)
        self.proc = self.env.spawn("prometheus", [
            "prometheus", "--config.file=" + cfg, "--storage.tsdb.path=" + os.path.join(self.dir, "data"),
            "--web.listen-address=%s:%d" % (self.env.ip(4), PORT), "--log.level=warn"])
        log("prometheus: %d scrape jobs from the ServiceMonitors (%s), %d rule files, at %s" % (
            len(jobs), ", ".join(j["job_name"] for j in jobs), len(rules), self.url))
        return self

    # --- its HTTP API ------------------------------------------------------------------

    def api(self, path, **q):
        url = self.url + path + ("?" + urllib.parse.urlencode(q) if q else "")
        try:
            with urllib.request.urlopen(url, timeout=5) as resp:
                return json.load(resp)["data"]
        except OSError:
            return None

    def targets(self):
        """[(job, scrape URL, health, last error)] of the active targets."""
        d = self.api("/api/v1/targets", state="active") or {}
        return [(t["labels"].get("job"), t["scrapeUrl"], t["health"], t.get("lastError", ""))
                for t in d.get("activeTargets", [])]

    def up(self, want):
        """True once every job in `want` ({job: count}) has that many targets, all up."""
        ts = self.targets()
        got = {j: [t for t in ts if t[0] == j] for j in want}
        return all(len(got[j]) == n and all(t[2] == "up" for t in got[j]) for j, n in want.items())

    def firing(self, alert):
        d = self.api("/api/v1/alerts") or {}
        return [a for a in d.get("alerts", []) if a["labels"].get("alertname") == alert and a["state"] == "firing"]

    def wait_up(self, want, timeout):
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if self.up(want):
                return self.targets()
            time.sleep(1)
        raise AssertionError("Prometheus's targets never all up (%s): %s" % (want, self.targets()))


# Dashboard queries that may answer nothing on a healthy cluster: no backup has completed in
# these scenarios, and gRPC requests that did not end OK may never have happened.
DASHBOARD_MAY_BE_EMPTY = {("Last backup", "A"), ("gRPC requests", "B")}


def check_dashboard(c, prom, timeout=90):
    """The console's etcd dashboard as the cluster holds it (the ConfigMap the payload applied):
    every query answers on the live Prometheus, and all but DASHBOARD_MAY_BE_EMPTY with data."""
    cm = c.env.get_json("configmap", "-n", "openshift-config-managed", "grafana-dashboard-etcd")
    assert cm, "no ConfigMap openshift-config-managed/grafana-dashboard-etcd"
    dash = json.loads(cm["data"]["etcd.json"])
    queries = [(p["title"], q["refId"], q["expr"]) for p in dash["panels"] for q in p["targets"]]
    pending = {}

    def answered():
        pending.clear()
        for title, ref, expr in queries:
            d = prom.api("/api/v1/query", query=expr)
            if d is None:
                pending[(title, ref)] = "an error"
            elif not d.get("result") and (title, ref) not in DASHBOARD_MAY_BE_EMPTY:
                pending[(title, ref)] = "no data"
        return not pending
    t0 = time.monotonic()
    try:
        wait_for("every dashboard query to answer with data", answered, timeout, interval=3)
    except AssertionError:
        raise AssertionError("dashboard queries without an answer: %s" % pending)
    log("prometheus: the dashboard's %d queries answer with data (%.0f s)" % (len(queries), time.monotonic() - t0))


def check_members_down_alert(c, victim="master-1"):
    """On a settled cluster: Prometheus scrapes every etcd member (job etcd, through the metrics
    proxy) and the operator (job etcd-operator) as the ServiceMonitors say; etcd on `victim`
    stops (its static pod manifest taken away, as a dead disk would), etcdMembersDown fires;
    etcd comes back, and the alert resolves. Before the stop, the console dashboard's queries
    answer with data (check_dashboard)."""
    # The operator runs as a process at .2 where its Deployment's pod would be.
    prom = Prometheus(c, {("openshift-etcd-operator", "metrics"): c.env.ip(2)}).start()
    want = {"etcd": len(c.masters), "etcd-operator": 1}
    t0 = time.monotonic()
    targets = prom.wait_up(want, 180)
    log("prometheus: every target up %.0f s after its start: %s" % (
        time.monotonic() - t0, sorted((t[0], t[1]) for t in targets)))
    wait_for("a rule evaluation over the scraped series", lambda: prom.api("/api/v1/rules"), 30)
    assert not prom.firing("etcdMembersDown"), prom.firing("etcdMembersDown")
    check_dashboard(c, prom)
    root = c.node_root(victim)
    manifest = os.path.join(root, "etc/kubernetes/manifests/etcd-pod.yaml")
    away = os.path.join(root, "etcd-pod.yaml.away")
    shutil.move(manifest, away)
    t_down = time.monotonic()
    log("prometheus: etcd on %s stopped (its manifest taken away)" % victim)
    try:
        fired = wait_for("etcdMembersDown to fire", lambda: prom.firing("etcdMembersDown"), 240, interval=2)
        log("prometheus: etcdMembersDown firing %.0f s after the stop (for: cut to %s): %s" % (
            time.monotonic() - t_down, FOR, [a["labels"] for a in fired]))
    finally:
        shutil.move(away, manifest)
    t_back = time.monotonic()
    prom.wait_up(want, 240)
    # The peers' send failures leave the rate window (cut to RANGE) last.
    wait_for("etcdMembersDown to resolve", lambda: not prom.firing("etcdMembersDown"), 300, interval=2)
    log("prometheus: etcdMembersDown resolved %.0f s after etcd on %s came back (ranges cut to %s)" % (
        time.monotonic() - t_back, victim, RANGE))
