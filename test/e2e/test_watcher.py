#!/usr/bin/env python3
"""The e2e invariant watcher (scenario.Watcher) against scripted member lists:
it must flag a membership change made while a voter is unhealthy (but not
the removal of that unhealthy voter itself, nor a change seen right after a
frozen voter answered again), a voter of two stopped, and two
pending members at once, and stay quiet on a clean 1 -> 2 sequence (a
learner's name appearing is etcd's doing, not a membership change).
No processes; Python 3 stdlib only. Usage: test_watcher.py"""
import os
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import scenario  # noqa: E402

scenario.log = lambda msg: None
A = {"ID": "1", "name": "a", "clientURLs": ["https://a"]}
B_UNSTARTED = {"ID": "2", "name": "", "isLearner": True}
B_LEARNER = {"ID": "2", "name": "b", "clientURLs": ["https://b"], "isLearner": True}
B = {"ID": "2", "name": "b", "clientURLs": ["https://b"]}
C_UNSTARTED = {"ID": "3", "name": "", "isLearner": True}


class Script:
    """One (members, unhealthy client URLs) step per sample."""

    def __init__(self, steps):
        self.steps, self.i, self.done = steps, -1, threading.Event()

    def members(self, endpoints, answered=None):
        self.i += 1
        if self.i >= len(self.steps):
            self.done.set()
            return self.steps[-1][0]
        return self.steps[self.i][0]

    def health(self, url):
        sick = self.steps[min(self.i, len(self.steps) - 1)][1]
        if "refused:" + url in sick:
            return "ConnectionRefusedError after 0.0 s"  # its etcd is not running
        if "held:" + url in sick:
            time.sleep(1.2)  # a frozen member resumed while it was asked: late, then healthy
            return None
        if "held-error:" + url in sick:
            time.sleep(1.2)  # resumed while asked, but the held connection broke: late, an error
            return "SSLEOFError after 1.2 s"
        if "held-timeout:" + url in sick:
            time.sleep(1.2)  # frozen all through the reading: the client gave up
            return "TimeoutError after 1.2 s"
        return "scripted" if url in sick else None


def run(steps, **kw):
    s = Script(steps)
    w = scenario.Watcher(s, lambda: ["https://a"], **kw)
    w.start()
    assert s.done.wait(30)
    w.stop.set()
    w.join(5)
    return w


def main():
    ok = [([A], ()), ([A], ()), ([A, B_UNSTARTED], ()), ([A, B_LEARNER], ()), ([A, B_LEARNER], ()),
          ([A, B], ()), ([A, B], ())]
    w = run(ok)
    assert not w.violations, w.violations
    assert w.changes == 2, w.changes  # the add and the promotion, not the name appearing

    # A voter unhealthy for the samples before the add: flagged. (A step's unhealthy
    # set is what the health checks after its list see.)
    bad = [([A, B], ()), ([A, B], ("https://b",)), ([A, B], ("https://b",)), ([A, B], ("https://b",)),
           ([A, B, C_UNSTARTED], ("https://b",)), ([A, B, C_UNSTARTED], ())]
    w = run(bad)
    assert any("while 1 voter(s) were unhealthy" in v for v in w.violations), w.violations

    # Unhealthy only after the last list without the change, as when the change itself
    # (removing the leader) starts an election: not the operator's doing.
    after = [([A, B], ()), ([A, B], ()), ([A, B], ("https://b",)), ([A, B, C_UNSTARTED], ("https://b",)),
             ([A, B, C_UNSTARTED], ())]
    w = run(after)
    assert not w.violations, w.violations

    # One unhealthy sample only (an election blip the operator could not have seen): not flagged.
    blip = [([A, B], ()), ([A, B], ()), ([A, B], ("https://b",)), ([A, B, C_UNSTARTED], ()), ([A, B, C_UNSTARTED], ())]
    w = run(blip)
    assert not w.violations, w.violations

    # A voter unhealthy, then held for a while and healthy (a frozen member that resumed
    # while it was asked): a change seen then may have come after it recovered, not judged.
    # Unhealthy in that sample (still frozen): flagged.
    resumed = [([A, B], ()), ([A, B], ("https://b",)), ([A, B], ("https://b",)), ([A, B], ("held:https://b",)),
               ([A, B, C_UNSTARTED], ()), ([A, B, C_UNSTARTED], ())]
    w = run(resumed)
    assert not w.violations, w.violations
    assert w.changes == 1, w.changes

    # The same when the held reading itself ends in an error (its connection broke as the
    # member resumed) and the next one is healthy: not judged.
    resumed_err = [([A, B], ()), ([A, B], ("https://b",)), ([A, B], ("https://b",)),
                   ([A, B], ("held-error:https://b",)), ([A, B], ()), ([A, B, C_UNSTARTED], ()),
                   ([A, B, C_UNSTARTED], ())]
    w = run(resumed_err)
    assert not w.violations, w.violations
    # ... also when the change shows in the list right after that held reading (CI saw it:
    # the operator promoted a learner within a second of the frozen voter's resume).
    # (A step's readings are taken in the sample that lists the next step.)
    resumed_err_now = [([A, B], ()), ([A, B], ("https://b",)), ([A, B], ("https://b",)),
                       ([A, B], ("held-error:https://b",)), ([A, B, C_UNSTARTED], ()),
                       ([A, B, C_UNSTARTED], ())]
    w = run(resumed_err_now)
    assert not w.violations, w.violations
    assert w.changes == 1, w.changes
    # Not when that reading timed out: the voter may be frozen still.
    still_frozen = [([A, B], ()), ([A, B], ("https://b",)), ([A, B], ("https://b",)),
                    ([A, B], ("held-timeout:https://b",)), ([A, B, C_UNSTARTED], ()),
                    ([A, B, C_UNSTARTED], ())]
    w = run(still_frozen)
    assert w.violations, "a change while the voter's reading timed out was not flagged"

    # The unhealthy voter itself removed (the single-member runbook, a dead master
    # replaced): not flagged. A healthy one removed while another is unhealthy: flagged.
    C = {"ID": "3", "name": "c", "clientURLs": ["https://c"]}
    sick_c = ("https://c",)
    gone = [([A, B, C], ()), ([A, B, C], sick_c), ([A, B, C], sick_c), ([A, B, C], sick_c), ([A, B], ()),
            ([A, B], ())]
    w = run(gone)
    assert not w.violations, w.violations
    wrong = [([A, B, C], ()), ([A, B, C], sick_c), ([A, B, C], sick_c), ([A, B, C], sick_c), ([A, C], sick_c),
             ([A, C], sick_c)]
    w = run(wrong)
    assert any("while 1 voter(s) were unhealthy" in v for v in w.violations), w.violations
    # Removed and re-added as a learner within one sample (the damaged-data remedy): not
    # flagged. A learner added while the unhealthy voter stays: flagged; so is a voter added.
    C_AGAIN = {"ID": "4", "name": "", "isLearner": True}
    again = [([A, B, C], ()), ([A, B, C], sick_c), ([A, B, C], sick_c), ([A, B, C], sick_c),
             ([A, B, C_AGAIN], ()), ([A, B, C_AGAIN], ())]
    w = run(again)
    assert not w.violations, w.violations
    D_LEARNER = {"ID": "5", "name": "", "isLearner": True}
    w = run([([A, B, C], ()), ([A, B, C], sick_c), ([A, B, C], sick_c), ([A, B, C], sick_c),
             ([A, B, C, D_LEARNER], sick_c), ([A, B, C, D_LEARNER], sick_c)])
    assert any("while 1 voter(s) were unhealthy" in v for v in w.violations), w.violations
    D_VOTER = {"ID": "5", "name": "d", "clientURLs": ["https://d"]}
    w = run([([A, B, C], ()), ([A, B, C], sick_c), ([A, B, C], sick_c), ([A, B, C], sick_c),
             ([A, B, C, D_VOTER], sick_c), ([A, B, C, D_VOTER], sick_c)])
    assert any("while 1 voter(s) were unhealthy" in v for v in w.violations), w.violations
    # A promotion seen in the very sample where the unhealthy voter answers again (it came
    # back from a restart between two samples; the operator may have acted after): not judged.
    # (A sample reads health before it lists members: a step's health is read by the next.)
    w = run([([A, B, C], ()), ([A, B, C], sick_c), ([A, B, C], sick_c), ([A, B, C], ()),
             ([A, B, C, D_VOTER], ()), ([A, B, C, D_VOTER], ())])
    assert not w.violations, w.violations

    # A voter of two stopped (a restart): flagged, as quorum is lost while it restarts;
    # allowed where the disaster-recovery override permits it. Unhealthy but running
    # (an election) is not a stop.
    stop = [([A, B], ()), ([A, B], ()), ([A, B], ("refused:https://b",)), ([A, B], ())]
    w = run(stop)
    assert any("voter b of two stopped" in v for v in w.violations), w.violations
    assert not run(stop, two_voter_restarts=True).violations
    assert not run([([A, B], ()), ([A, B], ("https://b",)), ([A, B], ())]).violations

    # Two pending members at once: flagged.
    two = [([A], ()), ([A, B_UNSTARTED, C_UNSTARTED], ()), ([A, B_UNSTARTED, C_UNSTARTED], ())]
    w = run(two)
    assert any("two pending members" in v for v in w.violations), w.violations
    print("ok")


if __name__ == "__main__":
    main()
