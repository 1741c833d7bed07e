#!/usr/bin/env python3
"""The PrometheusRule manifests/operator/0000_90_etcd-operator_03_prometheusrule.yaml,
checked by Prometheus' own promtool (ctest: unit/prometheus-rules).

Its spec is extracted to a rule file (JSON, which Prometheus reads as YAML) in a
temporary directory, `promtool check rules` parses and lints it, and `promtool test
rules` runs the *.test.yaml files beside this script against it. Before that, this
script checks what promtool cannot: the object's identity, that every alert has a
severity, a summary and a description, that each docs/ path an annotation names
exists, that every (alert, severity) has a test case where it fires (with its
expected annotations) and one where it does not, and that the signer thresholds
agree with the operator's own metric name and rotation window.

promtool comes from Debian's `prometheus` package (hack/install-deps.sh); a machine
without it fails here rather than skips, since CI installs it.
"""

import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "test", "sim"))
from kubeletsim import yaml_lite  # noqa: E402  (the tree's stdlib-only YAML loader)

MANIFEST = os.path.join(ROOT, "manifests", "operator", "0000_90_etcd-operator_03_prometheusrule.yaml")
TESTS = sorted(glob.glob(os.path.join(os.path.dirname(os.path.abspath(__file__)), "*.test.yaml")))
RULE_FILE = "etcd-prometheus-rules.json"  # the name every *.test.yaml lists in rule_files
SEVERITIES = ("info", "warning", "critical")
SIGNER_METRIC = "openshift_etcd_operator_signer_expiration_days"


def fail(msg):
    print("unit/prometheus-rules: " + msg, file=sys.stderr)
    sys.exit(1)


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def check_manifest(doc):
    """The object, and what every rule must carry; returns {(alert, severity): rule}."""
    want = {"apiVersion": "monitoring.coreos.com/v1", "kind": "PrometheusRule"}
    for k, v in want.items():
        if doc.get(k) != v:
            fail("%s is %r, not %r" % (k, doc.get(k), v))
    meta = doc.get("metadata") or {}
    if (meta.get("namespace"), meta.get("name")) != ("openshift-etcd-operator", "etcd-prometheus-rules"):
        fail("metadata is %r, not openshift-etcd-operator/etcd-prometheus-rules" % meta)
    rules = {}
    for group in doc["spec"]["groups"]:
        for r in group["rules"]:
            alert = r.get("alert")
            if not alert:
                fail("group %s: a rule without `alert` (recording rules do not belong here)" % group["name"])
            sev = (r.get("labels") or {}).get("severity")
            if sev not in SEVERITIES:
                fail("%s: severity %r is not one of %s" % (alert, sev, SEVERITIES))
            if (alert, sev) in rules:
                fail("%s: two rules with severity %s" % (alert, sev))
            ann = r.get("annotations") or {}
            if not ann.get("summary") or not ann.get("description"):
                fail("%s (%s): needs both a summary and a description" % (alert, sev))
            if not r.get("for"):
                fail("%s (%s): no `for`; one bad scrape would page" % (alert, sev))
            for text in ann.values():
                for path in re.findall(r"\bdocs/[\w./-]*\w", text):
                    if not os.path.isfile(os.path.join(ROOT, path)):
                        fail("%s (%s): names %s, which does not exist" % (alert, sev, path))
            rules[(alert, sev)] = r
    return rules


def check_signers(rules):
    """The signer alerts read the operator's own metric, below its rotation window."""
    operator_c = read(os.path.join(ROOT, "operator", "process", "operator.c"))
    if '"%s"' % SIGNER_METRIC not in operator_c:
        fail("%s is not registered in operator/process/operator.c any more" % SIGNER_METRIC)
    m = re.search(r"#define PKI_SIGNER_REFRESH_WINDOW\s+\(\(usec_t\)\s*(\d+)\s*\*\s*PKI_USEC_PER_DAY\)",
                  read(os.path.join(ROOT, "operator", "pki", "pki.h")))
    if not m:
        fail("PKI_SIGNER_REFRESH_WINDOW (operator/pki/pki.h) is not `((usec_t) <days> * PKI_USEC_PER_DAY)`")
    window = int(m.group(1))
    for alert in ("etcdSignerCAExpirationWarning", "etcdSignerCAExpirationCritical"):
        r = next((r for (a, _), r in rules.items() if a == alert), None)
        if r is None:
            fail("%s is missing" % alert)
        t = re.search(SIGNER_METRIC + r"\)\s*<\s*(\d+)", r["expr"])
        if not t:
            fail("%s: expected `... (%s) < <days>`" % (alert, SIGNER_METRIC))
        if int(t.group(1)) >= window:
            fail("%s: fires at %s days, but the operator rotates only at %d (PKI_SIGNER_REFRESH_WINDOW): "
                 "it would fire on every healthy cluster" % (alert, t.group(1), window))


def check_coverage(rules):
    """Every (alert, severity): one case where it fires, with annotations, one where it does not."""
    fires, quiet = set(), set()
    for path in TESTS:
        doc = yaml_lite.load(read(path))
        if doc.get("rule_files") != [RULE_FILE]:
            fail("%s: rule_files must be [%s]" % (os.path.basename(path), RULE_FILE))
        for t in doc["tests"]:
            for case in t.get("alert_rule_test") or []:
                alert = case["alertname"]
                got = set()
                for exp in case.get("exp_alerts") or []:
                    sev = (exp.get("exp_labels") or {}).get("severity")
                    ann = exp.get("exp_annotations") or {}
                    if not ann.get("summary") or not ann.get("description"):
                        fail("%s: %r expects %s (%s) without its summary and description"
                             % (os.path.basename(path), t["name"], alert, sev))
                    got.add(sev)
                for sev in SEVERITIES:
                    if (alert, sev) in rules:
                        (fires if sev in got else quiet).add((alert, sev))
    missing = ["%s (%s) never fires" % k for k in sorted(rules) if k not in fires]
    missing += ["%s (%s) is never shown quiet" % k for k in sorted(rules) if k not in quiet]
    if missing:
        fail("test cases missing:\n  " + "\n  ".join(missing))


def promtool(args, cwd):
    p = subprocess.run(["promtool"] + args, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       universal_newlines=True, timeout=300)
    print(p.stdout, end="")
    if p.returncode != 0:
        fail("promtool %s failed (exit %d)" % (" ".join(args[:2]), p.returncode))


def main():
    if not shutil.which("promtool"):
        fail("promtool is missing: run hack/install-deps.sh (Debian's `prometheus` package provides it)")
    if not TESTS:
        fail("no *.test.yaml beside " + __file__)
    doc = yaml_lite.load(read(MANIFEST))
    rules = check_manifest(doc)
    check_signers(rules)
    check_coverage(rules)
    with tempfile.TemporaryDirectory(prefix="prometheus-rules-") as tmp:
        with open(os.path.join(tmp, RULE_FILE), "w", encoding="utf-8") as f:
            json.dump(doc["spec"], f, indent=1)
        promtool(["check", "rules", RULE_FILE], tmp)
        for path in TESTS:
            shutil.copy(path, tmp)
        promtool(["test", "rules"] + [os.path.basename(p) for p in TESTS], tmp)
    print("unit/prometheus-rules: %d rules, each firing and quiet in %d test files"
          % (len(rules), len(TESTS)))


if __name__ == "__main__":
    main()
