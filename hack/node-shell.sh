#!/usr/bin/env bash
# A shell (or one command) "on" a simulated node, as `ssh core@master-1` is on
# a real one: in a private mount and UTS namespace, the node's host
# filesystem is where a real host has it, and the hostname is the node's.
#
#   hack/node-shell.sh NODE                 an interactive shell on NODE
#   hack/node-shell.sh NODE COMMAND [ARG]   run one command there, with its exit status
#   hack/node-shell.sh --root DIR NODE ...  the node whose kubelet-sim root is DIR
#
# The node is found under $NODE_SHELL_NODES/NODE, else the demo's
# ${LOCAL_UP_DIR:-.local-up}/nodes/NODE. Bound from the node's root:
#   /etc/kubernetes  (manifests, static-pod-resources, ...)
#   /var/lib         (etcd, etcd-backup, kubelet: one mount, so moves between them are renames)
#   /usr/local/bin   (what the etcd pod installs: cluster-backup.sh, ...)
#   /home/core
# The rest (/usr/bin/etcdctl, tar, sudo, ...) is this machine's, as a host's own
# tools are, but /usr/local/sbin holds test/sim/node-bin: crictl, answering
# from the node's kubelet-sim.
# NODE_SHELL_NAME and NODE_SHELL_IP name the node. Needs root, like kubelet-sim.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
binds=(etc/kubernetes var/lib usr/local/bin home/core)

usage() {
        echo "usage: hack/node-shell.sh [--root NODE_DIR] NODE [COMMAND [ARG...]]" >&2
        exit 2
}

if [ "${1:-}" = "--inside" ]; then
        # In the new namespaces: bind the node's directories, then run.
        shift
        dir=$1 node=$2 ip=$3
        shift 3
        for d in "${binds[@]}"; do
                mkdir -p "$dir/$d"
                # The mount point must exist on the real filesystem (an empty
                # directory, as kubelet-sim's containers leave; never removed).
                mkdir -p "/$d"
                mount --bind "$dir/$d" "/$d"
        done
        # The node's own tools that a host has and this machine lacks (crictl):
        # /usr/local/sbin, first on sudo's secure_path too.
        mkdir -p /usr/local/sbin
        mount --bind "$repo/test/sim/node-bin" /usr/local/sbin
        hostname "$node"
        # Its name resolves, as on a host (sudo asks).
        hosts=$(mktemp)
        printf '127.0.0.1\tlocalhost\n%s\t%s\n' "$ip" "$node" >"$hosts"
        mount --bind "$hosts" /etc/hosts
        rm -f "$hosts"
        export NODE_SHELL_NAME=$node NODE_SHELL_IP=$ip HOSTNAME=$node HOME=/root
        export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
        cd /
        if [ $# -eq 0 ]; then
                echo "node-shell: on $node ($ip); 'exit' to leave" >&2
                exec env PS1="[root@$node \\W]# " bash --norc -i
        fi
        exec "$@"
fi

dir=
if [ "${1:-}" = "--root" ]; then
        [ $# -ge 3 ] || usage
        dir=$2
        shift 2
fi
[ $# -ge 1 ] || usage
node=$1
shift
case $node in
-* | "" | */*) usage ;;
esac
if [ -z "$dir" ]; then
        dir=${NODE_SHELL_NODES:-${LOCAL_UP_DIR:-$repo/.local-up}/nodes}/$node
fi
runtime=$dir/var/lib/kubelet/sim-runtime/containers.json
if [ ! -f "$runtime" ]; then
        echo "node-shell: $dir is not a simulated node's root (no $runtime): is the demo up (hack/local-up.sh), or is --root right?" >&2
        exit 1
fi
if [ "$(id -u)" -ne 0 ]; then
        echo "node-shell: needs root (private mount namespaces), as kubelet-sim does" >&2
        exit 1
fi
ip=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["nodeIP"])' "$runtime")
dir=$(cd "$dir" && pwd)
exec unshare --mount --uts --propagation private -- bash "$repo/hack/node-shell.sh" --inside "$dir" "$node" "$ip" "$@"
