"""kube-apiserver-sim: a Kubernetes API server for tests, backed by a real etcd.

Standard library only (see test/sim/README.md for why and what is modelled).
"""
