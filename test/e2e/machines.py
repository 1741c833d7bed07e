"""The Machine API, played by the test (issue 13, point 3): master Machines
in openshift-machine-api as the installer and the machine-api operator keep
them, and the machine controller's deletion: a deleted Machine is drained
only once no pre-drain hook is left on it, then its host goes (its kubelet
with its pods), then its Node, then the Machine's finalizer.

check_master_replaced() replaces a healthy master by a new one on a settled
cluster, 3 -> 4 -> 3 members, with the invariant watcher and a writer
running: the operator puts its EtcdQuorumOperator hook on every master
Machine, adds the new master's member, removes the old one only once the
new one votes, lifts the hook only once the old member is gone, and the
drain then goes through the guard budget. check_dead_master_replaced():
a master's host dies and its Machine is deleted; the dead member goes
first, then the replacement joins (3 -> 2 -> 3). Both follow
docs/runbooks/replace-master.md word for word (runbook.py) where it has a
command: the admin's checks, the Machine deletions, and what to watch. Python
3 stdlib only."""
import json
import threading
import time

from e2e import log, wait_for
from runbook import Runbook
from scenario import start_actors, stop_actors

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


def add_master(c, node, ip):
    """A new master: its host (kubelet) comes up, its Node registers, its Machine runs."""
    env = c.env
    c.masters.append(node)
    c.master_ips[node] = ip
    c.all_eps.append("https://%s:2379" % ip)
    c.master_eps.append("https://%s:2379" % ip)
    env.start_kubelet(node, ip, master=True)
    create_machine(env, node, ip)
    wait_for("the hook on %s" % machine_name(node), lambda: HOOK in hooks(machine(env, node)), 60)


def remove_host(c, node):
    """The machine controller's last steps once it may: the host goes (its kubelet stops
    with its pods), then its Node, then the Machine's finalizer."""
    env = c.env
    env.stop_kubelet(node)
    env.kubectl("delete", "node", node, "--ignore-not-found", "--wait=false")
    env.kubectl("delete", "pods", "-n", "openshift-etcd", "--field-selector", "spec.nodeName=" + node,
                "--grace-period=0", "--force", "--ignore-not-found", "--wait=false")
    env.kubectl("patch", "machine", "-n", NS, machine_name(node), "--type=json", "-p",
                json.dumps([{"op": "remove", "path": "/metadata/finalizers"}]))
    wait_for("%s's Machine gone" % node, lambda: machine(env, node) is None, 60)
    c.masters.remove(node)
    c.master_eps.remove("https://%s:2379" % c.master_ips[node])
    del c.master_ips[node]


def drain_and_remove(c, node):
    """The machine controller once the hooks are lifted: it drains the node (the guard
    through its budget, kubectl as the real client), then the host goes (remove_host).
    A drain that fails is tried again, as machine-api's drain controller requeues it: an
    eviction can meet a server error (kube-apiserver's "raft: stopped" while its etcd
    client still used the member being replaced, seen under load), which kubectl does
    not retry itself."""
    failures = []
    for attempt in range(3):
        r = c.env.kubectl("drain", node, "--ignore-daemonsets", "--force", "--delete-emptydir-data",
                          "--timeout", "120s", check=False)
        if r.returncode == 0:
            break
        failures.append("%s %s" % (r.stdout, r.stderr))
        log("drain of %s failed (attempt %d), trying again in 10 s: %s" % (node, attempt + 1,
                                                                            r.stderr.strip()[-300:]))
        time.sleep(10)
    assert r.returncode == 0, "drain of %s: %s" % (node, "\n---\n".join(failures))
    log("drained %s%s" % (node, " after %d failed attempts" % len(failures) if failures else ""))
    remove_host(c, node)


def voters(c):
    return sorted(m.get("name") or "" for m in c.etcd.members(c.endpoints()) if not m.get("isLearner"))


def wait_hook_lifted(c, node):
    """The operator lifts its hook from the deleting Machine only once the member is gone."""
    env = c.env
    t0 = time.monotonic()
    m = wait_for("the hook lifted from %s" % machine_name(node),
                 lambda: (lambda m: m if m and not hooks(m) else None)(machine(env, node)), 300)
    assert m["metadata"].get("deletionTimestamp"), m["metadata"]
    names = [x.get("name") for x in c.etcd.members(c.endpoints())]
    assert node not in names, "hook lifted while %s was still a member: %s" % (node, names)
    log("%s's member removed and the hook lifted %.1f s after the Machine's deletion; members %s"
        % (node, time.monotonic() - t0, sorted(names)))


def ensure_machines(c):
    env = c.env
    if env.get_json("namespace", NS) is None:
        env.kubectl("create", "namespace", NS)
    for m in c.masters:
        if machine(env, m) is None:
            create_machine(env, m, c.master_ips[m])
    wait_for("the EtcdQuorumOperator hook on every master Machine",
             lambda: all(HOOK in hooks(machine(env, m)) for m in c.masters), 60)
    log("the operator put its pre-drain hook on %s" % ", ".join(machine_name(m) for m in c.masters))


def check_actors(c, watcher, writer):
    assert not watcher.violations, "invariants broken: %s" % watcher.violations[:5]
    c.check_writer(writer)
    return [len(shape) for _, shape, _ in watcher.history]


# docs/runbooks/replace-master.md's commands, in order (runbook.py numbers them from 1).
RB_CHECK, RB_WAIT_VOTER, RB_DELETE_OLD, RB_WATCH, RB_DELETE_DEAD, RB_WHY = range(1, 7)


def runbook(c, old):
    return Runbook(c.env, "replace-master.md", {"<old-machine>": machine_name(old),
                                                  "<dead-machine>": machine_name(old)}, {})


def check_master_replaced(c, old, new, new_ip):
    """Replaces a healthy master `old` by a new master `new` (3 -> 4 -> 3) through the Machine API,
    as the runbook says."""
    ensure_machines(c)
    book = runbook(c, old)
    watcher, writer = c.actors()
    start_actors(watcher, writer)
    try:
        out = book.run(RB_CHECK, RB_CHECK)[0]
        assert "EtcdMembersAvailable=True" in out and "EtcdMembersDegraded=False" in out, out
        assert machine_name(old) in out, out
        add_master(c, new, new_ip)  # step 2: the new master's Machine (the test plays the Machine API)

        def voter_joined():
            out = book.run(RB_WAIT_VOTER, RB_WAIT_VOTER)[0]
            return "4 members are available" in out and "EtcdMembersDegraded=False" in out and \
                "EtcdMembersProgressing=False" in out
        wait_for("the runbook's step 2 to say done (four members)", voter_joined, 300, interval=3)
        assert len(voters(c)) == 4 and new in voters(c), voters(c)
        log("four voters: %s" % voters(c))

        # The old master's Machine is deleted: the finalizer holds it, the hook holds its drain.
        book.run(RB_DELETE_OLD, RB_DELETE_OLD)
        wait_hook_lifted(c, old)
        out = book.run_until(RB_WATCH, lambda o: old in o and "ScaleDown" in o, "ScaleDown of %s" % old)
        assert "EtcdQuorumOperator" not in out, "the runbook's step 4 still shows the hook: %s" % out
        book.run(RB_WHY, RB_WHY)  # what "When it waits" asks for answers
        drain_and_remove(c, old)
        final = sorted((n, False) for n in c.masters)
        wait_for("the watcher to see the three masters as voters", lambda: watcher.last == final, 60)
    finally:
        stop_actors(watcher, writer)
    sizes = check_actors(c, watcher, writer)
    log("member counts during the replacement: %s" % sizes)
    assert max(sizes) == 4 and sizes[-1] == 3, sizes
    # The removal came after the new member voted: no shape lacks both.
    for _, shape, _ in watcher.history:
        names = dict(shape)
        assert old in names or names.get(new) is False, "%s removed before %s voted: %s" % (old, new, shape)


def check_dead_master_replaced(c, dead, new, new_ip):
    """A master's host dies and its Machine is deleted (as a MachineHealthCheck does): the
    operator removes the dead member first (the two left are healthy), lifts the hook, and
    the replacement joins after (3 -> 2 -> 3: a dead voter is never joined by a fourth).
    Then the dead master's certificate Secrets are deleted, nobody else's."""
    env = c.env
    ensure_machines(c)
    watcher, writer = c.actors()
    start_actors(watcher, writer)
    try:
        env.stop_kubelet(dead)  # the host goes down with its pods
        log("%s's host is down" % dead)
        runbook(c, dead).run(RB_DELETE_DEAD, RB_DELETE_DEAD)  # "A dead master", step 1
        wait_hook_lifted(c, dead)
        remove_host(c, dead)  # an unreachable host is not drained
        add_master(c, new, new_ip)
        wait_for("%s to join as a voter (three voters)" % new, lambda: voters(c) == sorted(c.masters), 300)
        final = sorted((n, False) for n in c.masters)
        wait_for("the watcher to see the three masters as voters", lambda: watcher.last == final, 60)
    finally:
        stop_actors(watcher, writer)
    sizes = check_actors(c, watcher, writer)
    log("member counts after %s died: %s" % (dead, sizes))
    assert max(sizes) == 3 and min(sizes) == 2 and sizes[-1] == 3, sizes
    # Its certificates go with it (EtcdCertCleanerController); the other masters' stay.
    prefixes = ("etcd-peer-", "etcd-serving-", "etcd-serving-metrics-")

    def secrets_of(node):
        return [p + node for p in prefixes if env.get_json("secret", "-n", "openshift-etcd", p + node)]
    wait_for("%s's certificate Secrets deleted" % dead, lambda: not secrets_of(dead), 60)
    for node in c.masters:
        assert len(secrets_of(node)) == 3, (node, secrets_of(node))
    log("%s's certificate Secrets are gone; every master's are there" % dead)


def check_two_masters_replaced(c, old, new):
    """Two masters replaced at once: both new Machines created and both old ones deleted
    together. The members are added and removed one at a time, never fewer than three
    voters (an old one may go as soon as one new one votes); the machine
    controller handles each deleted Machine on its own (drain once its hook is lifted,
    then the host goes), so the drains overlap and must not wait on each other through
    etcd-guard-pdb (the operator deletes the guard of a cordoned master whose hook it
    lifted)."""
    env = c.env
    ensure_machines(c)
    watcher, writer = c.actors()
    start_actors(watcher, writer)
    errors = []

    def machine_controller(node):
        try:
            wait_hook_lifted(c, node)
            drain_and_remove(c, node)
        except Exception as e:  # reported by the test's thread
            errors.append("%s: %s" % (node, e))
    threads = [threading.Thread(target=machine_controller, args=(node,), daemon=True) for node in old]
    try:
        for node, ip in new:
            add_master(c, node, ip)
        for node in old:
            env.kubectl("delete", "machine", "-n", NS, machine_name(node), "--wait=false")
        log("Machines %s deleted, %s created" % (", ".join(machine_name(n) for n in old),
                                                  ", ".join(machine_name(n) for n, _ in new)))
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=600)
        assert not errors, errors
        final = sorted((n, False) for n in c.masters)
        wait_for("the watcher to see the three masters as voters", lambda: watcher.last == final, 120)
    finally:
        stop_actors(watcher, writer)
    sizes = check_actors(c, watcher, writer)
    log("member counts while two masters were replaced: %s" % sizes)
    assert max(sizes) >= 4 and sizes[-1] == 3, sizes
    # Whether an old member goes once the first new one votes or after the second joins is
    # the operator's choice; never is the cluster below three voters.
    for _, shape, _ in watcher.history:
        voting = [n for n, learner in shape if not learner]
        assert len(voting) >= 3, "fewer than three voters while replacing two masters: %s" % shape
