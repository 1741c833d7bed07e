#!/usr/bin/env python3
"""contract.policy_allows, the NetworkPolicy judge the e2e contract check uses in place of a CNI,
against NetworkPolicy's own rules and against manifests/static/networkpolicies.yaml: a pod no
policy selects is open both ways; a direction named in a selecting policy's policyTypes is closed
but for what some such policy's rules allow (an empty rule allows everything; a rule with ports or
peers is not "everywhere"); policyTypes left out means Ingress, plus Egress when there are egress
rules. Then the shipped policies: installer, periodic-backup and purge pods get all egress, guard
and pruner pods none, and no pod gets ingress.
No processes; Python 3 stdlib only. Usage: test_netpol.py"""
import os
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "sim"))
from contract import policy_allows, selects  # noqa: E402
from kubeletsim import yaml_lite  # noqa: E402

DENY = {"spec": {"podSelector": {}, "policyTypes": ["Ingress", "Egress"]}}


def pol(selector, types=None, egress=None, ingress=None):
    spec = {"podSelector": selector}
    if types is not None:
        spec["policyTypes"] = types
    if egress is not None:
        spec["egress"] = egress
    if ingress is not None:
        spec["ingress"] = ingress
    return {"spec": spec}


class Rules(unittest.TestCase):
    def test_unselected_pod_is_open(self):
        self.assertEqual(policy_allows([pol({"matchLabels": {"app": "x"}}, ["Egress"], [])], {"app": "y"}),
                         (True, True))

    def test_default_deny(self):
        self.assertEqual(policy_allows([DENY], {"app": "guard"}), (False, False))

    def test_allow_all_egress_adds_to_deny(self):
        allow = pol({"matchExpressions": [{"key": "app", "operator": "In", "values": ["installer"]}]},
                    ["Egress"], [{}])
        self.assertEqual(policy_allows([DENY, allow], {"app": "installer"}), (False, True))
        self.assertEqual(policy_allows([DENY, allow], {"app": "pruner"}), (False, False))

    def test_restricted_rule_is_not_everywhere(self):
        dns = pol({}, ["Egress"], [{"ports": [{"port": 53, "protocol": "UDP"}]}])
        self.assertEqual(policy_allows([dns], {"app": "a"}), (True, False))

    def test_policy_types_default(self):
        # No policyTypes: Ingress only, since there are no egress rules.
        self.assertEqual(policy_allows([pol({})], {"app": "a"}), (False, True))
        # No policyTypes but egress rules: Egress as well.
        self.assertEqual(policy_allows([pol({}, egress=[{"ports": [{"port": 443}]}])], {"app": "a"}), (False, False))

    def test_selectors(self):
        self.assertTrue(selects({}, {}))
        self.assertTrue(selects({"matchExpressions": [{"key": "app", "operator": "Exists"}]}, {"app": "a"}))
        self.assertFalse(selects({"matchExpressions": [{"key": "app", "operator": "DoesNotExist"}]}, {"app": "a"}))
        self.assertTrue(selects({"matchExpressions": [{"key": "app", "operator": "NotIn", "values": ["b"]}]},
                                {"app": "a"}))
        self.assertFalse(selects({"matchLabels": {"app": "a", "x": "y"}}, {"app": "a"}))


class Shipped(unittest.TestCase):
    def test_manifest(self):
        path = os.path.join(HERE, "..", "..", "manifests", "static", "networkpolicies.yaml")
        with open(path) as f:
            pols = [d for d in yaml_lite.load_all(f.read()) if d]
        self.assertEqual(sorted(p["metadata"]["name"] for p in pols), ["allow-egress-to-api-and-stores", "default-deny"])
        for app, egress in (("installer", True), ("cluster-backup-cronjob", True), ("etcd-backup-s3-purge", True),
                            ("pruner", False), ("guard", False), ("anything-else", False)):
            self.assertEqual(policy_allows(pols, {"app": app}), (False, egress), app)


if __name__ == "__main__":
    unittest.main(verbosity=2)
