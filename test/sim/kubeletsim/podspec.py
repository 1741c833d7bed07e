"""What the kubelet derives from a pod spec before it starts anything: defaults, the
container environment ($(VAR) expansion, fieldRefs, configMap/secret references),
volumes on the node (hostPath under the node root, emptyDir, configMap, secret,
downwardAPI, projected, the service-account volume, a bound persistentVolumeClaim of a
hostPath or local volume) and the mount list for a container.
"""

import base64
import json
import os
import shutil

from .client import ApiError, quote

SA_MOUNT = "/var/run/secrets/kubernetes.io/serviceaccount"
STD_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


class ConfigError(Exception):
    """The pod cannot start as specified (CreateContainerConfigError)."""


# -- defaults -----------------------------------------------------------------------
def _probe_defaults(p):
    if not isinstance(p, dict):
        return
    p.setdefault("periodSeconds", 10)
    p.setdefault("timeoutSeconds", 1)
    p.setdefault("successThreshold", 1)
    p.setdefault("failureThreshold", 3)
    p.setdefault("initialDelaySeconds", 0)
    if isinstance(p.get("httpGet"), dict):
        p["httpGet"].setdefault("path", "/")
        p["httpGet"].setdefault("scheme", "HTTP")


def apply_defaults(pod):
    spec = pod.setdefault("spec", {})
    spec.setdefault("restartPolicy", "Always")
    spec.setdefault("terminationGracePeriodSeconds", 30)
    spec.setdefault("dnsPolicy", "ClusterFirst")
    spec.setdefault("schedulerName", "default-scheduler")
    for c in (spec.get("initContainers") or []) + (spec.get("containers") or []):
        c.setdefault("terminationMessagePath", "/dev/termination-log")
        c.setdefault("terminationMessagePolicy", "File")
        c.setdefault("imagePullPolicy", "IfNotPresent")
        for k in ("livenessProbe", "readinessProbe", "startupProbe"):
            _probe_defaults(c.get(k))
    for v in spec.get("volumes") or []:
        if isinstance(v.get("hostPath"), dict):
            v["hostPath"].setdefault("type", "")
    return pod


# -- $(VAR) expansion (k8s.io/kubernetes third_party/forked/golang/expansion) ---------
def expand(text, env):
    if not isinstance(text, str):
        return "" if text is None else str(text)
    out = []
    checkpoint = 0
    cursor = 0
    n = len(text)
    while cursor < n:
        if text[cursor] == "$" and cursor + 1 < n:
            out.append(text[checkpoint:cursor])
            rest = text[cursor + 1:]
            if rest[0] == "$":
                out.append("$")
                advance = 1
            elif rest[0] == "(":
                close = rest.find(")", 1)
                if close < 0:
                    out.append("$(")
                    advance = 1
                else:
                    name = rest[1:close]
                    out.append(env[name] if name in env else "$(" + name + ")")
                    advance = close + 1
            else:
                out.append("$" + rest[0])
                advance = 1
            cursor += advance
            checkpoint = cursor + 1
        cursor += 1
    out.append(text[checkpoint:])
    return "".join(out)


# -- fieldRefs ------------------------------------------------------------------------
def field_value(pod, path, node):
    md = pod.get("metadata") or {}
    simple = {
        "metadata.name": md.get("name"), "metadata.namespace": md.get("namespace"),
        "metadata.uid": md.get("uid"), "spec.nodeName": node.name,
        "spec.serviceAccountName": (pod.get("spec") or {}).get("serviceAccountName", ""),
        "status.hostIP": node.ip, "status.hostIPs": node.ip,
        "status.podIP": node.ip, "status.podIPs": node.ip,
    }
    if path in simple:
        return simple[path] or ""
    for prefix, key in (("metadata.labels", "labels"), ("metadata.annotations", "annotations")):
        if path == prefix:
            return "\n".join('%s="%s"' % (k, v) for k, v in sorted((md.get(key) or {}).items()))
        if path.startswith(prefix + "['") and path.endswith("']"):
            return (md.get(key) or {}).get(path[len(prefix) + 2:-2], "")
    raise ConfigError("unsupported fieldRef %s" % path)


def _claim_path(node, client, ns, ref, api_pod):
    """The node path of a bound claim's volume (hostPath and local volumes: a path on this
    node, as a real node mounts them); a claim that is missing or not bound fails the pod's
    setup, which is retried, as the kubelet waits to mount it."""
    claim = ref.get("claimName") or ""
    if not api_pod:
        raise ConfigError("static pods may not use persistentVolumeClaim volumes")
    pvc = _get_obj(client, "persistentvolumeclaims", ns, claim)
    if pvc is None:
        raise ConfigError('persistentvolumeclaim "%s" not found' % claim)
    vname = (pvc.get("spec") or {}).get("volumeName")
    if (pvc.get("status") or {}).get("phase") != "Bound" or not vname:
        raise ConfigError('persistentvolumeclaim "%s" is not bound' % claim)
    try:
        pv = client.get("/api/v1/persistentvolumes/%s" % quote(vname))
    except ApiError as e:
        raise ConfigError('persistentvolume "%s" of claim "%s": %s' % (vname, claim, e))
    spec = pv.get("spec") or {}
    src = spec.get("hostPath") or spec.get("local")
    if not src or not src.get("path"):
        raise ConfigError('persistentvolume "%s": kubelet-sim mounts hostPath and local volumes only' % vname)
    path = node.host_path(src["path"])
    if spec.get("hostPath") and (src.get("type") or "") in ("", "DirectoryOrCreate"):
        os.makedirs(path, 0o755, exist_ok=True)
    if not os.path.isdir(path):
        raise ConfigError('persistentvolume "%s": %s is not a directory on this node' % (vname, src["path"]))
    return path


def _get_obj(client, kind, ns, name):
    try:
        return client.get("/api/v1/namespaces/%s/%s/%s" % (quote(ns), kind, quote(name)))
    except ApiError as e:
        if e.code == 404:
            return None
        raise


def _obj_data(obj, kind):
    """configmaps -> {key: bytes}; secrets -> decoded data."""
    out = {}
    if kind == "secrets":
        for k, v in (obj.get("data") or {}).items():
            out[k] = base64.b64decode(v or "")
    else:
        for k, v in (obj.get("data") or {}).items():
            out[k] = (v or "").encode()
        for k, v in (obj.get("binaryData") or {}).items():
            out[k] = base64.b64decode(v or "")
    return out


def service_env(node):
    """The kubernetes service's environment, as the kubelet gives every pod."""
    host, port = node.kc.host, str(node.kc.port)
    return {
        "KUBERNETES_SERVICE_HOST": host, "KUBERNETES_SERVICE_PORT": port,
        "KUBERNETES_SERVICE_PORT_HTTPS": port, "KUBERNETES_PORT": "tcp://%s:%s" % (host, port),
        "KUBERNETES_PORT_%s_TCP" % port: "tcp://%s:%s" % (host, port),
        "KUBERNETES_PORT_%s_TCP_PROTO" % port: "tcp",
        "KUBERNETES_PORT_%s_TCP_PORT" % port: port,
        "KUBERNETES_PORT_%s_TCP_ADDR" % port: host,
    }


def container_env(node, pod, c, client):
    """Ordered env of container c (a dict keeps insertion order)."""
    ns = (pod.get("metadata") or {}).get("namespace", "default")
    env = {"PATH": STD_PATH, "HOSTNAME": hostname(node, pod), "HOME": "/root"}
    env.update(service_env(node))
    for src in c.get("envFrom") or []:
        prefix = src.get("prefix") or ""
        for key, kind in (("configMapRef", "configmaps"), ("secretRef", "secrets")):
            ref = src.get(key)
            if not ref:
                continue
            obj = _get_obj(client, kind, ns, ref.get("name", "")) if client else None
            if obj is None:
                if ref.get("optional"):
                    continue
                raise ConfigError('%s "%s" not found' % (kind[:-1], ref.get("name")))
            for k, v in _obj_data(obj, kind).items():
                env[prefix + k] = v.decode(errors="replace")
    for e in c.get("env") or []:
        name = e.get("name")
        if not name:
            continue
        if "valueFrom" in e and e["valueFrom"]:
            vf = e["valueFrom"]
            if "fieldRef" in vf:
                env[name] = field_value(pod, vf["fieldRef"].get("fieldPath", ""), node)
            elif "configMapKeyRef" in vf or "secretKeyRef" in vf:
                kind = "configmaps" if "configMapKeyRef" in vf else "secrets"
                ref = vf.get("configMapKeyRef") or vf.get("secretKeyRef")
                obj = _get_obj(client, kind, ns, ref.get("name", "")) if client else None
                data = _obj_data(obj, kind) if obj else None
                if data is None or ref.get("key") not in data:
                    if ref.get("optional"):
                        continue
                    raise ConfigError("couldn't find key %s in %s %s/%s" %
                                      (ref.get("key"), kind[:-1], ns, ref.get("name")))
                env[name] = data[ref["key"]].decode(errors="replace")
            elif "resourceFieldRef" in vf:
                env[name] = "0"
            else:
                raise ConfigError("unsupported valueFrom in env %s" % name)
        else:
            env[name] = expand(e.get("value", ""), env)
    if not node.strict_images and node.bindir not in env.get("PATH", "").split(":"):
        env["PATH"] = node.bindir + ":" + env.get("PATH", STD_PATH)
    return env


def image_path(env, rootfs, mounts):
    """Strict images: PATH entries resolve in the image's root filesystem, except those a
    volume covers (a hostPath /usr/local/bin shows the node's files, as in a real container);
    the node's command map is not on it."""
    covered = [m.get("mountPath", "").rstrip("/") for m in mounts]
    out = []
    for d in env.get("PATH", STD_PATH).split(":"):
        if not d:
            continue
        if any(m and (d == m or d.startswith(m + "/")) for m in covered):
            out.append(d)
        elif d.startswith("/"):
            out.append(os.path.join(rootfs, d.lstrip("/")))
    env["PATH"] = ":".join(out)
    return env


def command_line(c, env):
    cmd = [expand(a, env) for a in c.get("command") or []]
    args = [expand(a, env) for a in c.get("args") or []]
    return cmd + args


def hostname(node, pod):
    if (pod.get("spec") or {}).get("hostNetwork"):
        return node.name
    return ((pod.get("metadata") or {}).get("name") or "pod")[:63]


# -- volumes ------------------------------------------------------------------------
def pod_dir(node, uid):
    return os.path.join(node.state_dir, "pods", uid)


def _write_files(d, files, mode):
    """Atomically replace directory d's content with files {relpath: bytes}."""
    tmp = d + ".tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    for rel, data in files.items():
        p = os.path.join(tmp, rel.lstrip("/"))
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, "wb") as f:
            f.write(data)
        os.chmod(p, mode)
    shutil.rmtree(d, ignore_errors=True)
    os.rename(tmp, d)


def _select_items(data, items, what, optional):
    if not items:
        return dict(data)
    out = {}
    for it in items:
        if it.get("key") not in data:
            if optional:
                continue
            raise ConfigError("%s: key %s not found" % (what, it.get("key")))
        out[it.get("path") or it["key"]] = data[it["key"]]
    return out


def _ref_files(client, ns, kind, ref, items):
    name = ref.get("name") or ref.get("secretName") or ""
    obj = _get_obj(client, kind, ns, name) if client else None
    if obj is None:
        if ref.get("optional"):
            return {}
        raise ConfigError('%s "%s" not found' % (kind[:-1], name))
    return _select_items(_obj_data(obj, kind), items, "%s %s" % (kind[:-1], name),
                         ref.get("optional"))


def _downward_files(node, pod, items):
    out = {}
    for it in items or []:
        if it.get("fieldRef"):
            out[it["path"]] = field_value(pod, it["fieldRef"].get("fieldPath", ""), node).encode()
        elif it.get("resourceFieldRef"):
            out[it["path"]] = b"0"
    return out


def sa_files(node, pod):
    ns = (pod.get("metadata") or {}).get("namespace", "default")
    return {"token": node.pod_token(pod).encode(), "ca.crt": node.kc.ca_pem or b"",
            "namespace": ns.encode()}


def prepare_volumes(node, pod, uid, api_pod, client):
    """Create every volume on the node; returns {name: host path}."""
    ns = (pod.get("metadata") or {}).get("namespace", "default")
    base = os.path.join(pod_dir(node, uid), "volumes")
    out = {}
    for v in (pod.get("spec") or {}).get("volumes") or []:
        name = v.get("name")
        if "hostPath" in v:
            hp = v["hostPath"] or {}
            path = node.host_path(hp.get("path", "/"))
            t = hp.get("type") or ""
            if t in ("", "DirectoryOrCreate"):
                if not os.path.lexists(path):
                    os.makedirs(path, 0o755, exist_ok=True)
            elif t == "FileOrCreate":
                if not os.path.lexists(path):
                    os.makedirs(os.path.dirname(path), exist_ok=True)
                    open(path, "a").close()
            elif t == "Directory":
                if not os.path.isdir(path):
                    raise ConfigError("hostPath type check failed: %s is not a directory" % path)
            elif t == "File":
                if not os.path.isfile(path):
                    raise ConfigError("hostPath type check failed: %s is not a file" % path)
            elif not os.path.exists(path):
                raise ConfigError("hostPath type check failed: %s does not exist" % path)
            out[name] = path
        elif "emptyDir" in v:
            path = os.path.join(base, "kubernetes.io~empty-dir", name)
            os.makedirs(path, exist_ok=True)
            out[name] = path
        elif "configMap" in v or "secret" in v:
            if not api_pod:
                raise ConfigError("static pods may not use configMap/secret volumes")
            kind = "configmaps" if "configMap" in v else "secrets"
            ref = v.get("configMap") or v.get("secret") or {}
            path = os.path.join(base, "kubernetes.io~" + kind[:-1], name)
            _write_files(path, _ref_files(client, ns, kind, ref, ref.get("items")),
                         ref.get("defaultMode", 0o644))
            out[name] = path
        elif "persistentVolumeClaim" in v:
            out[name] = _claim_path(node, client, ns, v["persistentVolumeClaim"] or {}, api_pod)
        elif "downwardAPI" in v:
            dv = v["downwardAPI"] or {}
            path = os.path.join(base, "kubernetes.io~downward-api", name)
            _write_files(path, _downward_files(node, pod, dv.get("items")),
                         dv.get("defaultMode", 0o644))
            out[name] = path
        elif "projected" in v:
            pv = v["projected"] or {}
            files = {}
            for s in pv.get("sources") or []:
                if "serviceAccountToken" in s:
                    files[s["serviceAccountToken"].get("path", "token")] = node.pod_token(pod).encode()
                elif "configMap" in s or "secret" in s:
                    if not api_pod:
                        raise ConfigError("static pods may not use configMap/secret volumes")
                    kind = "configmaps" if "configMap" in s else "secrets"
                    ref = s.get("configMap") or s.get("secret") or {}
                    if kind == "configmaps" and ref.get("name") == "kube-root-ca.crt":
                        files.update({"ca.crt": node.kc.ca_pem or b""} if not ref.get("items")
                                     else {it.get("path"): node.kc.ca_pem or b""
                                           for it in ref["items"]})
                        continue
                    files.update(_ref_files(client, ns, kind, ref, ref.get("items")))
                elif "downwardAPI" in s:
                    files.update(_downward_files(node, pod, (s["downwardAPI"] or {}).get("items")))
            path = os.path.join(base, "kubernetes.io~projected", name)
            _write_files(path, files, pv.get("defaultMode", 0o644))
            out[name] = path
        else:
            kinds = [k for k in v if k != "name"]
            raise ConfigError("volume %s: type %s is not supported by kubelet-sim" %
                              (name, ",".join(kinds)))
    if api_pod and (pod.get("spec") or {}).get("automountServiceAccountToken") is not False:
        path = os.path.join(base, "kubernetes.io~projected", "kube-api-access-sim")
        _write_files(path, sa_files(node, pod), 0o644)
        out["\0serviceaccount"] = path
    return out


def container_mounts(pod, c, volumes):
    mounts = []
    for m in c.get("volumeMounts") or []:
        src = volumes.get(m.get("name"))
        if src is None:
            raise ConfigError("volumeMount %s: no volume of that name" % m.get("name"))
        if m.get("subPath"):
            src = os.path.join(src, m["subPath"].lstrip("/"))
            if not os.path.lexists(src):
                os.makedirs(src, exist_ok=True)
        mounts.append({"name": m["name"], "source": src, "mountPath": m.get("mountPath", ""),
                       "readOnly": bool(m.get("readOnly"))})
    sa = volumes.get("\0serviceaccount")
    if sa and not any(os.path.normpath(m["mountPath"]) == SA_MOUNT for m in mounts):
        mounts.append({"name": "kube-api-access-sim", "source": sa, "mountPath": SA_MOUNT,
                       "readOnly": True})
    for m in mounts:
        if not m["mountPath"].startswith("/"):
            raise ConfigError("mountPath %r must be absolute" % m["mountPath"])
    return mounts


def canonical(obj):
    return json.dumps(obj, sort_keys=True, separators=(",", ":"))
