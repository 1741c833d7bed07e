"""The Machine API, played by the test (issue 13, point 3): master Machines
in openshift-machine-api as the installer and the machine-api operator keep
them, and the machine controller's deletion: a deleted Machine is drained
only once no pre-drain hook is left on it, then its host goes (its kubelet
with its pods), then its Node, then the Machine's finalizer.

check_master_replaced() replaces master-0 by a new master on a settled
cluster, 3 -> 4 -> 3 members, with the invariant watcher and a writer
running: the operator puts its EtcdQuorumOperator hook on every master
Machine, adds the new master's member, removes the old one only once the
new one votes, lifts the hook only once the old member is gone, and the
drain then goes through the guard budget. Python 3 stdlib only."""
import json
import signal
import time

from e2e import log, wait_for
from scenario import condition, start_actors, stop_actors

NS = "openshift-machine-api"
ROLE = "machine.openshift.io/cluster-api-machine-role"
HOOK = {"name": "EtcdQuorumOperator", "owner": "clusteroperator/etcd"}
FINALIZER = "machine.openshift.io"


def machine_name(node):
    return "e2e-" + node


def create_machine(env, node, ip):
    """A Running master Machine for `node`, with the machine controller's finalizer."""
    name = machine_name(node)
    env.kubectl("apply", "-f", "-", input=json.dumps({
        "apiVersion": "machine.openshift.io/v1beta1", "kind": "Machine",
        "metadata": {"name": name, "namespace": NS, "finalizers": [FINALIZER],
                     "labels": {ROLE: "master", "machine.openshift.io/cluster-api-machine-type": "master"}},
        "spec": {"providerSpec": {}}}))
    env.kubectl("patch", "machine", "-n", NS, name, "--subresource=status", "--type=merge", "-p", json.dumps({
        "status": {"phase": "Running", "nodeRef": {"kind": "Node", "name": node},
                   "addresses": [{"type": "InternalIP", "address": ip}, {"type": "Hostname", "address": node}]}}))


def machine(env, node):
    return env.get_json("machine", "-n", NS, machine_name(node))


def hooks(m):
    return (((m or {}).get("spec") or {}).get("lifecycleHooks") or {}).get("preDrain") or []


def check_master_replaced(c, old, new, new_ip):
    """Replaces master `old` by a new master `new` (3 -> 4 -> 3) through the Machine API."""
    env = c.env
    os_ns = env.get_json("namespace", NS)
    if os_ns is None:
        env.kubectl("create", "namespace", NS)
    for m in c.masters:
        create_machine(env, m, c.master_ips[m])
    wait_for("the EtcdQuorumOperator hook on every master Machine",
             lambda: all(HOOK in hooks(machine(env, m)) for m in c.masters), 60)
    log("the operator put its pre-drain hook on %s" % ", ".join(machine_name(m) for m in c.masters))

    watcher, writer = c.actors()
    start_actors(watcher, writer)
    try:
        # A new master: its host (kubelet) comes up, its Node registers, its Machine runs.
        c.masters.append(new)
        c.master_ips[new] = new_ip
        c.all_eps.append("https://%s:2379" % new_ip)
        c.master_eps.append("https://%s:2379" % new_ip)
        env.start_kubelet(new, new_ip, master=True)
        create_machine(env, new, new_ip)
        wait_for("the hook on %s" % machine_name(new), lambda: HOOK in hooks(machine(env, new)), 60)

        def voters():
            ms = c.etcd.members(c.endpoints())
            return sorted(m.get("name") or "" for m in ms if not m.get("isLearner"))
        wait_for("%s to join as a voter (four voters)" % new, lambda: len(voters()) == 4 and new in voters(), 300)
        log("four voters: %s" % voters())

        # The old master's Machine is deleted: the finalizer holds it, the hook holds its drain.
        env.kubectl("delete", "machine", "-n", NS, machine_name(old), "--wait=false")
        t_deleted = time.monotonic()
        m = wait_for("the hook lifted from %s" % machine_name(old),
                     lambda: (lambda m: m if m and not hooks(m) else None)(machine(env, old)), 300)
        assert m["metadata"].get("deletionTimestamp"), m["metadata"]
        names = [x.get("name") for x in c.etcd.members(c.endpoints())]
        assert old not in names, "hook lifted while %s was still a member: %s" % (old, names)
        log("%s's member removed and the hook lifted %.1f s after the Machine's deletion; members %s"
            % (old, time.monotonic() - t_deleted, sorted(names)))

        # The machine controller drains (the guard through its budget), then the host goes.
        r = env.kubectl("drain", old, "--ignore-daemonsets", "--force", "--delete-emptydir-data",
                        "--timeout", "90s", check=False)
        assert r.returncode == 0, "drain of %s: %s %s" % (old, r.stdout, r.stderr)
        log("drained %s" % old)
        for p, name in env.procs:
            if name == "kubelet-" + old and p.poll() is None:
                p.send_signal(signal.SIGTERM)
                p.wait(timeout=30)
        env.kubectl("delete", "node", old, "--wait=false")
        env.kubectl("delete", "pods", "-n", "openshift-etcd", "--field-selector", "spec.nodeName=" + old,
                    "--grace-period=0", "--force", "--ignore-not-found", "--wait=false")
        env.kubectl("patch", "machine", "-n", NS, machine_name(old), "--type=json", "-p",
                    json.dumps([{"op": "remove", "path": "/metadata/finalizers"}]))
        wait_for("%s's Machine gone" % old, lambda: machine(env, old) is None, 60)
        c.masters.remove(old)
        c.master_eps.remove("https://%s:2379" % c.master_ips[old])
        del c.master_ips[old]

        final = sorted((n, False) for n in c.masters)
        wait_for("the watcher to see the three new masters as voters", lambda: watcher.last == final, 60)
    finally:
        stop_actors(watcher, writer)
    assert not watcher.violations, "invariants broken: %s" % watcher.violations[:5]
    sizes = [len(shape) for _, shape, _ in watcher.history]
    log("member counts during the replacement: %s" % sizes)
    assert max(sizes) == 4 and sizes[-1] == 3, sizes
    # The removal came after the new member voted: no shape lacks both.
    for _, shape, _ in watcher.history:
        names = dict(shape)
        assert old in names or names.get(new) is False, "%s removed before %s voted: %s" % (old, new, shape)
    c.check_writer(writer)
    st = env.get_json("etcd", "cluster")
    log("ClusterMemberRemovalControllerDegraded: %s" % (condition(st, "ClusterMemberRemovalControllerDegraded"),))
