"""The OpenShift contract, checked on a settled e2e cluster: the objects other
components read (names, namespaces, keys, types, labels, condition types and
reasons, the static pod's shape, the ClusterOperator) against one
machine-readable table, test/data/contract.json, whose every entry is
upstream's value. check() collects every mismatch and fails with all of them."""
import base64
import calendar
import ipaddress
import json
import os
import re
import ssl
import tempfile
import time
import urllib.error
import urllib.request

from e2e import ROOT, log

TABLE = os.path.join(ROOT, "test", "data", "contract.json")


def load():
    with open(TABLE) as f:
        return json.load(f)


def _rfc3339(v):
    return calendar.timegm(time.strptime(v, "%Y-%m-%dT%H:%M:%SZ"))


def _expand(pattern, nodes):
    if "{node" not in pattern:
        return [pattern]
    return [pattern.replace("{node}", n).replace("{node_envvar}", n.replace("-", "_").replace(".", "_"))
            for n in nodes]


def _expand_all(patterns, nodes):
    return [x for p in patterns for x in _expand(p, nodes)]


def _leaves(o, prefix=""):
    """The overridden leaves of unsupportedConfigOverrides, dotted, arrays by index, sorted."""
    if isinstance(o, dict):
        items = o.items()
    elif isinstance(o, list):
        items = ((str(i), v) for i, v in enumerate(o))
    else:
        return [prefix] if prefix else []
    out = []
    for k, v in items:
        out.extend(_leaves(v, prefix + "." + k if prefix else k))
    return sorted(out)


def _subject(pem):
    """(CN, sorted O values, SANs as text, IPs in their short form) of a PEM certificate."""
    with tempfile.NamedTemporaryFile("wb", suffix=".crt") as f:
        f.write(pem)
        f.flush()
        d = ssl._ssl._test_decode_cert(f.name)  # the stdlib's own parser; no third-party module here
    attrs = [kv for rdn in d.get("subject", ()) for kv in rdn]
    cn = [v for k, v in attrs if k == "commonName"]
    orgs = sorted(v for k, v in attrs if k == "organizationName")
    sans = []
    for kind, v in d.get("subjectAltName", ()):
        if kind == "IP Address":
            v = ipaddress.ip_address(v.strip()).compressed
        sans.append(v)
    return (cn[0] if cn else None), orgs, sans


def _conditions(obj):
    return {c.get("type"): c for c in ((obj or {}).get("status") or {}).get("conditions") or []}


def selects(selector, labels):
    """A LabelSelector (matchLabels, matchExpressions In/NotIn/Exists/DoesNotExist) on labels."""
    for k, v in (selector.get("matchLabels") or {}).items():
        if labels.get(k) != v:
            return False
    for e in selector.get("matchExpressions") or []:
        k, op, vals = e.get("key"), e.get("operator"), e.get("values") or []
        if (op == "In" and labels.get(k) not in vals) or (op == "NotIn" and k in labels and labels[k] in vals) or \
                (op == "Exists" and k not in labels) or (op == "DoesNotExist" and k in labels):
            return False
    return True


def policy_allows(policies, labels):
    """(ingress allowed from anywhere, egress allowed to anywhere) for a pod with these labels,
    as NetworkPolicy defines it: traffic of a direction is open unless a policy selecting the
    pod names that direction in policyTypes; then only what some such policy's rules allow. A
    rule allows everywhere only when it is empty ({}: no peers, no ports)."""
    out = []
    for direction, rules_key in (("Ingress", "ingress"), ("Egress", "egress")):
        chosen = [p["spec"] for p in policies if selects(p["spec"].get("podSelector") or {}, labels) and
                  direction in (p["spec"].get("policyTypes") or
                                ["Ingress"] + (["Egress"] if p["spec"].get("egress") else []))]
        if not chosen:
            out.append(True)
            continue
        out.append(any(r == {} for p in chosen for r in p.get(rules_key) or []))
    return tuple(out)


class Checker:
    def __init__(self, env, nodes, member_ids, metrics_fetch=None):
        self.env, self.nodes, self.member_ids, self.metrics_fetch = env, nodes, member_ids, metrics_fetch
        self.table = load()
        self.problems = []
        self.checked = 0

    def expect(self, ok, what):
        self.checked += 1
        if not ok:
            self.problems.append(what)

    def get(self, kind, ns, name):
        args = [kind, name] + (["-n", ns] if ns else [])
        return self.env.get_json(*args)

    def namespaces(self):
        for ns, want in self.table["namespaces"].items():
            obj = self.get("namespace", None, ns)
            self.expect(obj is not None, "namespace %s missing" % ns)
            labels = ((obj or {}).get("metadata") or {}).get("labels") or {}
            for k, v in (want.get("labels") or {}).items():
                self.expect(labels.get(k) == v, "namespace %s: label %s=%r, upstream %r" % (ns, k, labels.get(k), v))

    def data_objects(self, kind, entries):
        for e in entries:
            for name in _expand(e["name"], self.nodes):
                obj = self.get(kind, e["namespace"], name)
                where = "%s %s/%s" % (kind, e["namespace"], name)
                self.expect(obj is not None, "%s missing" % where)
                if obj is None:
                    continue
                if "type" in e:
                    self.expect(obj.get("type") == e["type"], "%s: type %r, upstream %r" % (where, obj.get("type"), e["type"]))
                keys = set((obj.get("data") or {}).keys())
                for k in _expand_all(e.get("keys") or [], self.nodes):
                    self.expect(k in keys, "%s: no key %s (has %s)" % (where, k, sorted(keys)))
                md = obj.get("metadata") or {}
                for field in ("labels", "annotations"):
                    have = md.get(field) or {}
                    for k, v in (e.get(field) or {}).items():
                        self.expect(have.get(k) == v, "%s: %s %s=%r, upstream %r" % (
                            where, field[:-1], k, have.get(k), v))
                ca = e.get("cert_annotations")
                if ca:
                    # library-go's certificate metadata (upstream: certrotation's annotations)
                    ann = (obj.get("metadata") or {}).get("annotations") or {}
                    for k in ("auth.openshift.io/certificate-not-after", "auth.openshift.io/certificate-not-before",
                              "auth.openshift.io/certificate-issuer", "openshift.io/description"):
                        self.expect(ann.get(k), "%s: no annotation %s" % (where, k))
                    if "refresh_period" in ca:
                        self.expect(ann.get("certificates.openshift.io/refresh-period") == ca["refresh_period"],
                                    "%s: certificates.openshift.io/refresh-period %r, upstream %r" % (
                                        where, ann.get("certificates.openshift.io/refresh-period"), ca["refresh_period"]))
                    self.expect(ann.get("openshift.io/owning-component") == "etcd",
                                "%s: openshift.io/owning-component %r, upstream 'etcd'" % (
                                    where, ann.get("openshift.io/owning-component")))
                    try:
                        days = (_rfc3339(ann["auth.openshift.io/certificate-not-after"]) -
                                _rfc3339(ann["auth.openshift.io/certificate-not-before"])) / 86400
                        self.expect(abs(days - ca["validity_days"]) < 1, "%s: valid %.1f days, upstream %d" % (
                            where, days, ca["validity_days"]))
                    except (KeyError, ValueError) as err:
                        self.expect(False, "%s: validity annotations unreadable: %s" % (where, err))
                subj = e.get("subject")
                if subj and "tls.crt" in (obj.get("data") or {}):
                    cn, orgs, sans = _subject(base64.b64decode(obj["data"]["tls.crt"]))
                    want_cn = min(sans) if subj["cn"] == "{first-san}" and sans else subj["cn"]
                    self.expect(cn == want_cn, "%s: subject CN %r, upstream %r" % (where, cn, want_cn))
                    self.expect(orgs == sorted(subj["o"]), "%s: subject O %s, upstream %s" % (where, orgs, subj["o"]))
                if e.get("member_id_keys"):
                    # upstream: fmt.Sprintf("%x", member.ID), no zero padding
                    want = {"%x" % i for i in self.member_ids}
                    self.expect(keys == want, "%s: keys %s, upstream %%x of the voters' IDs %s" % (
                        where, sorted(keys), sorted(want)))

    def revisions(self):
        etcd = self.get("etcd", None, "cluster") or {}
        rev = (etcd.get("status") or {}).get("latestAvailableRevision")
        self.expect(isinstance(rev, int) and rev > 0, "etcds/cluster: no latestAvailableRevision")
        if not isinstance(rev, int):
            return
        for kind, names in (("configmap", self.table["revisioned"]), ("secret", self.table["revisioned_secrets"])):
            for n in names:
                self.expect(self.get(kind, "openshift-etcd", "%s-%d" % (n, rev)) is not None,
                            "revisioned copy %s openshift-etcd/%s-%d missing" % (kind, n, rev))
        self.expect(self.get("configmap", "openshift-etcd", "revision-status-%d" % rev) is not None,
                    "revision-status-%d missing" % rev)

    def static_pods(self):
        sp = self.table["static_pod"]
        for node in self.nodes:
            name = sp["name"].replace("{node}", node)
            pod = self.get("pod", sp["namespace"], name)
            where = "pod %s/%s" % (sp["namespace"], name)
            self.expect(pod is not None, "%s missing" % where)
            if pod is None:
                continue
            md, spec = pod.get("metadata") or {}, pod.get("spec") or {}
            labels, ann = md.get("labels") or {}, md.get("annotations") or {}
            for k, v in sp["labels"].items():
                self.expect(labels.get(k) == v, "%s: label %s=%r, upstream %r" % (where, k, labels.get(k), v))
            for k in sp["label_keys"]:
                self.expect(k in labels, "%s: no label %s" % (where, k))
            for k, v in sp["annotations"].items():
                self.expect(ann.get(k) == v, "%s: annotation %s=%r, upstream %r" % (where, k, ann.get(k), v))
            inits = [c.get("name") for c in spec.get("initContainers") or []]
            ctrs = [c.get("name") for c in spec.get("containers") or []]
            self.expect(inits == sp["init_containers"], "%s: init containers %s, upstream %s" % (
                where, inits, sp["init_containers"]))
            self.expect(ctrs == sp["containers"], "%s: containers %s, upstream %s" % (where, ctrs, sp["containers"]))
            self.expect(spec.get("priorityClassName") == sp["priority_class"], "%s: priorityClassName %r" % (
                where, spec.get("priorityClassName")))
            self.expect(bool(spec.get("hostNetwork")) == sp["host_network"], "%s: hostNetwork %r" % (
                where, spec.get("hostNetwork")))
            env, ports, command, etcd = {}, set(), "", {}
            for c in spec.get("containers") or []:
                if c.get("name") == "etcd":
                    etcd = c
                    env = {e.get("name"): e.get("value") for e in c.get("env") or []}
                    ports = {p.get("containerPort") for p in c.get("ports") or []}
                    command = " ".join((c.get("command") or []) + (c.get("args") or []))
            for kind, want in sp["etcd_probes"].items():
                have = etcd.get(kind) or {}
                for k, v in want.items():
                    got = {f: have.get(k, {}).get(f) for f in v} if isinstance(v, dict) else have.get(k)
                    self.expect(got == v, "%s: container etcd's %s %s=%r, upstream %r" % (where, kind, k, got, v))
            for p in sp["etcd_ports"]:
                self.expect(p in ports, "%s: container etcd has no port %d (has %s)" % (where, p, sorted(ports)))
            for pattern in sp["etcd_command_matches"]:
                self.expect(re.search(pattern, command), "%s: container etcd does not run etcd with %s" % (
                    where, pattern.strip()))
            for k in _expand_all(sp["env_per_node"], self.nodes) + sp["env"]:
                self.expect(k in env, "%s: container etcd has no env %s" % (where, k))
            for k, v in sp["env_values"].items():
                if k.startswith("_"):  # a note on the values, not a variable
                    continue
                self.expect(env.get(k) == v, "%s: env %s=%r, upstream %r" % (where, k, env.get(k), v))

    def guard_and_service(self):
        g = self.table["guard"]
        for name in _expand(g["pod"], self.nodes):
            self.expect(self.get("pod", g["namespace"], name) is not None, "guard pod %s/%s missing" % (g["namespace"], name))
        self.expect(self.get("pdb", g["namespace"], g["pdb"]) is not None, "PodDisruptionBudget %s missing" % g["pdb"])
        s = self.table["service"]
        svc = self.get("service", s["namespace"], s["name"])
        self.expect(svc is not None, "service %s/%s missing" % (s["namespace"], s["name"]))
        ports = {p.get("port") for p in ((svc or {}).get("spec") or {}).get("ports") or []}
        for p in s["ports"]:
            self.expect(p in ports, "service %s: no port %d (has %s)" % (s["name"], p, sorted(ports)))
        le = self.table["lease"]
        self.expect(self.get("lease", le["namespace"], le["name"]) is not None,
                    "leader lease %s/%s missing" % (le["namespace"], le["name"]))

    def conditions(self):
        etcd = self.get("etcd", None, "cluster")
        conds = _conditions(etcd)
        for t in self.table["etcd_conditions"]:
            self.expect(t in conds, "etcds/cluster: no condition %s" % t)
        for t, (status, reason) in self.table["etcd_condition_reasons"].items():
            c = conds.get(t) or {}
            self.expect((c.get("status"), c.get("reason")) == (status, reason),
                        "etcds/cluster: %s is %s/%s, upstream %s/%s" % (t, c.get("status"), c.get("reason"), status, reason))
        for f in self.table["etcd_status_fields"]:
            self.expect(f in ((etcd or {}).get("status") or {}), "etcds/cluster: no status.%s" % f)
        # On a settled cluster: the spec's generation observed, every master ready at the latest revision.
        st = (etcd or {}).get("status") or {}
        gen = ((etcd or {}).get("metadata") or {}).get("generation")
        self.expect(st.get("observedGeneration") == gen,
                    "etcds/cluster: status.observedGeneration %s, metadata.generation %s" % (
                        st.get("observedGeneration"), gen))
        self.expect(st.get("readyReplicas") == len(self.nodes),
                    "etcds/cluster: status.readyReplicas %s with %d masters settled" % (
                        st.get("readyReplicas"), len(self.nodes)))
        co_want = self.table["clusteroperator"]
        co = self.get("clusteroperator", None, co_want["name"]) or {}
        cconds = _conditions(co)
        for t in co_want["conditions"]:
            self.expect(t in cconds, "clusteroperators/etcd: no condition %s" % t)
        versions = {v.get("name") for v in (co.get("status") or {}).get("versions") or []}
        # library-go's UnsupportedConfigOverrides gate: the harness itself sets listenOnNodeIP (all
        # masters share one host), so the e2e clusters are the overridden case.
        leaves = _leaves((etcd or {}).get("spec", {}).get("unsupportedConfigOverrides"))
        gate = conds.get("UnsupportedConfigOverridesUpgradeable") or {}
        up = cconds.get("Upgradeable") or {}
        if leaves:
            self.expect((gate.get("status"), gate.get("reason")) == ("False", "UnsupportedConfigOverridesSet") and
                        ("setting: [%s]" % " ".join(leaves)) in (gate.get("message") or ""),
                        "etcds/cluster: UnsupportedConfigOverridesUpgradeable %s with overrides %s" % (gate, leaves))
            self.expect(up.get("status") == "False" and "UnsupportedConfigOverridesUpgradeable" in (up.get("message") or ""),
                        "clusteroperators/etcd: Upgradeable %s with overrides %s" % (up, leaves))
        else:
            self.expect((gate.get("status"), gate.get("reason")) == ("True", "NoUnsupportedConfigOverrides"),
                        "etcds/cluster: UnsupportedConfigOverridesUpgradeable %s without overrides" % gate)
        for v in co_want["versions"]:
            self.expect(v in versions, "clusteroperators/etcd: no version %s (has %s)" % (v, sorted(versions)))
        related = (co.get("status") or {}).get("relatedObjects") or []
        for r in co_want["related_objects"]:
            self.expect(any(all(o.get(k, "") == r[k] for k in r) for o in related),
                        "clusteroperators/etcd: relatedObjects lacks %s" % r)

    def metrics(self):
        """The operator's /metrics as Prometheus reads it (a callable: HTTPS, service-ca's CA,
        Prometheus's client certificate from kube-apiserver's client CA), as another scraper
        does (prometheus-k8s's token), and refused without either."""
        if not self.metrics_fetch:
            return
        try:
            text = self.metrics_fetch()
        except OSError as e:
            self.expect(False, "metrics with Prometheus's client certificate: %s" % e)
            return
        for m in self.table["metrics"]:
            self.expect(m in text, "metrics: no %s" % m)
        try:
            self.metrics_fetch(cert=False, token=True)
        except OSError as e:
            self.expect(False, "metrics with prometheus-k8s's token: %s" % e)
        try:
            self.metrics_fetch(cert=False)
            self.expect(False, "metrics: served without a client certificate or bearer token")
        except urllib.error.HTTPError as e:
            self.expect(e.code == 401, "metrics without credentials: HTTP %d, not 401" % e.code)
        except OSError as e:
            self.expect(False, "metrics without credentials: %s, not 401" % e)

    def monitoring(self):
        """What OpenShift's monitoring reads: StaticResourcesController's ServiceMonitors (the
        control plane serves their CRD) and the Role that lets Prometheus discover etcd."""
        for name, profile in (("etcd", "full"), ("etcd-minimal", "minimal")):
            sm = self.get("servicemonitors.monitoring.coreos.com", "openshift-etcd-operator", name)
            self.expect(sm is not None, "servicemonitor openshift-etcd-operator/%s missing" % name)
            labels = ((sm or {}).get("metadata") or {}).get("labels") or {}
            self.expect(labels.get("monitoring.openshift.io/collection-profile") == profile,
                        "servicemonitor %s: collection profile %s, not %s" % (
                            name, labels.get("monitoring.openshift.io/collection-profile"), profile))
        for kind in ("role", "rolebinding"):
            self.expect(self.get(kind, "openshift-etcd", "prometheus-k8s") is not None,
                        "%s openshift-etcd/prometheus-k8s missing" % kind)

    def network_policies(self):
        """Every pod of openshift-etcd judged by its NetworkPolicies as a CNI would (the
        harness has none to enforce them): a pod on the host's network is outside them; a pod
        on the pod network gets no ingress, and egress exactly when its kind needs it (the
        table's network_policies.egress: app label -> allowed)."""
        t = self.table["network_policies"]
        pols = (self.env.get_json("networkpolicies", "-n", t["namespace"]) or {}).get("items") or []
        names = {p["metadata"]["name"] for p in pols}
        for name in t["names"]:
            self.expect(name in names, "networkpolicy %s/%s missing (has %s)" % (t["namespace"], name, sorted(names)))
        pods = (self.env.get_json("pods", "-n", t["namespace"]) or {}).get("items") or []
        seen = set()
        for pod in pods:
            if (pod.get("spec") or {}).get("hostNetwork"):
                continue
            labels = (pod.get("metadata") or {}).get("labels") or {}
            app = labels.get("app")
            want = t["egress"].get(app)
            self.expect(want is not None, "pod %s (app=%s) on the pod network: the table says nothing of its "
                        "egress" % (pod["metadata"]["name"], app))
            ingress, egress = policy_allows(pols, labels)
            self.expect(not ingress, "pod %s (app=%s): ingress allowed" % (pod["metadata"]["name"], app))
            self.expect(egress == want, "pod %s (app=%s): egress %s, wanted %s" % (
                pod["metadata"]["name"], app, "allowed" if egress else "denied", "allowed" if want else "denied"))
            seen.add(app)
        for app in t["must_see"]:
            self.expect(app in seen, "no pod app=%s on the pod network to judge" % app)
        log("contract: network policies %s judged for the pods on the pod network (app %s)" % (
            ", ".join(sorted(names)), ", ".join(sorted(seen))))

    def run(self):
        self.namespaces()
        self.data_objects("secret", self.table["secrets"])
        self.data_objects("configmap", self.table["configmaps"])
        self.revisions()
        self.static_pods()
        self.guard_and_service()
        self.conditions()
        self.metrics()
        self.monitoring()
        self.network_policies()
        return self.problems


def check(env, nodes, member_ids, metrics_fetch=None):
    """Fail with every difference between the cluster and the table."""
    c = Checker(env, nodes, member_ids, metrics_fetch)
    problems = c.run()
    assert not problems, "the cluster differs from upstream's contract (%s) in %d of %d checks:\n  %s" % (
        os.path.relpath(TABLE, ROOT), len(problems), c.checked, "\n  ".join(problems))
    log("contract: %d checks against %s passed" % (c.checked, os.path.relpath(TABLE, ROOT)))
