"""kubelet-sim: a kubelet emulator for tests (see test/sim/KUBELET-SIM.md)."""
