"""A master's address changes (issue 13, point 4) on a settled cluster.

check_master_moves(): the master's host goes down and comes back with
another IP, as after a DHCP change or a move to another network. The old
address is taken off this machine for the rest of the scenario (a route of
type unreachable in the kernel's local table: binding it fails with
EADDRNOTAVAIL, connecting to it with EHOSTUNREACH, as for an address no host
has any more), so nothing can go on serving there. The kubelet comes back
with the new --node-ip and reports it as the Node's InternalIP. Then, with
no help from the test: the old static pod cannot start (it listens on the
old address); the operator issues new certificates and rolls out a revision
with the new address, this master first; once its member is down and the
other voters are healthy it removes that member (event
MemberAddressChanged); the master's etcd, now on the new address, finds no
member there, moves its old data aside and waits; the operator adds it as a
learner and promotes it; the rest of the rollout follows. Checked: the
watcher's invariants (quorum never lost, no membership change while another
voter is unhealthy, never a voter of two restarted), no acknowledged write
lost, the member back under a new ID on https://NEW:2380 and serving TLS for
the new address, the old data kept, etcd-endpoints on the
new address, clusteroperator/etcd settled, and
docs/runbooks/address-change.md, run word for word, shows the removal and
says done. Python 3 stdlib only."""
import subprocess
import time

from e2e import log, wait_for
from runbook import Runbook
from scenario import start_actors, stop_actors

# docs/runbooks/address-change.md's commands, in order (runbook.py numbers them from 1).
RB_EVENTS, RB_DONE = 1, 2


def take_address_away(env, ip):
    """The address stops being this machine's until the scenario ends."""
    route = ["unreachable", ip + "/32", "table", "local"]
    r = subprocess.run(["ip", "route", "add"] + route, capture_output=True, text=True)
    assert r.returncode == 0, "ip route add %s: %s (the test needs CAP_NET_ADMIN)" % (" ".join(route),
                                                                                 r.stderr.strip())
    env.on_exit.append(lambda: subprocess.run(["ip", "route", "del"] + route, capture_output=True))


def check_master_moves(c, node, new_ip):
    env = c.env
    old_ip = c.master_ips[node]
    watcher, writer = c.actors()
    start_actors(watcher, writer)
    before = c.data_dir_entries(node)
    t0 = time.monotonic()
    try:
        members = wait_for("the member list", lambda: {m["name"]: m for m in c.etcd.members(c.endpoints())}, 60)
        old = members[node]["ID"]
        env.stop_kubelet(node)
        take_address_away(env, old_ip)
        c.move_master(node, new_ip)
        env.start_kubelet(node, new_ip, master=True)
        log("%s is back with address %s instead of %s (member %x)" % (node, new_ip, old_ip, int(old)))
        m = c.wait_member_back(node, old, watcher, timeout=300)
        log("%s is a voter again as %x, %.0f s after the move" % (node, int(m["ID"]), time.monotonic() - t0))
        assert m["peerURLs"] == ["https://%s:2380" % new_ip], m
        assert m["clientURLs"] == ["https://%s:2379" % new_ip], m
        c.wait_settled(240)
        c.wait_at_latest(240)
        log("settled at the new address %.0f s after the move" % (time.monotonic() - t0))
    finally:
        stop_actors(watcher, writer)
    assert not watcher.violations, "invariants broken: %s" % watcher.violations[:5]
    shapes = [h[1] for h in watcher.history]
    log("membership since the move: %s" % shapes)
    assert any(learner for shape in shapes for _, learner in shape), "never a learner: %s" % shapes
    c.check_data_archived(node, before)
    # docs/runbooks/address-change.md, word for word: the removal's event, and "done".
    book = Runbook(env, "address-change.md", {}, {})
    out = book.run(RB_EVENTS, RB_EVENTS)[0]
    assert "MemberAddressChanged" in out and old_ip in out and new_ip in out, \
        "the runbook's step 1 shows no MemberAddressChanged event: %s" % out
    out = book.run(RB_DONE, RB_DONE)[0]
    assert "3 members are available" in out and "EtcdMembersDegraded=False" in out and \
        "EtcdMembersProgressing=False" in out and new_ip in out and old_ip not in out, \
        "the runbook's step 2 does not say done: %s" % out
    c.check_writer(writer)
    c.check_endpoints()  # etcd-endpoints on the new address
