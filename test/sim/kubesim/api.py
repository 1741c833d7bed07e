"""Request routing and the REST verbs (https://kubernetes.io/docs/reference/using-api/api-concepts/).

handle() authenticates, applies injected latency and faults, and dispatches:
discovery and OpenAPI documents, /sim/* test controls, and resource requests
(GET get/list/watch, POST create, PUT update, PATCH patch/apply, DELETE delete/
deletecollection, and the status, scale, eviction, binding and finalize
subresources).  Every failure leaves as a Status object.
"""

import copy
import hmac
import json
import time
import traceback
import urllib.parse

from kubeletsim import yaml_lite
from . import discovery, errors, lists, objects, protobuf, tables, watchserve
from . import rbac as rbac_mod
from .etcd import EtcdError, EtcdUnavailable
from .objects import meta
from .patch import apply_patch
from .selectors import Predicate, selector_matches
from .store import WriteOpts

PUBLIC_PATHS = {"/healthz", "/livez", "/readyz", "/version"}
PATCH_TYPES = ("application/json-patch+json", "application/merge-patch+json",
               "application/strategic-merge-patch+json", "application/apply-patch+yaml")


def _media(header):
    """[(type, params)] of an Accept or Content-Type header."""
    out = []
    for part in (header or "").split(","):
        bits = [b.strip() for b in part.split(";")]
        if not bits[0]:
            continue
        params = {}
        for b in bits[1:]:
            k, _, v = b.partition("=")
            params[k.strip()] = v.strip()
        out.append((bits[0].lower(), params))
    return out


def negotiate(accept):
    """('json'|'table'|'partial', apiVersion) for a read, or 406."""
    types = _media(accept)
    if not types:
        return "json", None
    for mt, p in types:
        if mt not in ("application/json", "*/*", "application/*"):
            continue
        as_ = p.get("as")
        if as_ is None:
            return "json", None
        if p.get("g") == "meta.k8s.io" and p.get("v") in ("v1", "v1beta1"):
            if as_ == "Table":
                return "table", "meta.k8s.io/" + p["v"]
            if as_ in ("PartialObjectMetadata", "PartialObjectMetadataList"):
                return "partial", "meta.k8s.io/" + p["v"]
    raise errors.not_acceptable("only the following media types are accepted: application/json, "
                                "application/json;as=Table;v=v1;g=meta.k8s.io, "
                                "application/json;as=PartialObjectMetadata;v=v1;g=meta.k8s.io")


WRITE_METHODS = ("POST", "PUT", "PATCH", "DELETE")
SLOW_REQUEST_S = 2.0   # a request that takes this long is logged with its time in etcd


def _is_watch(path):
    q = urllib.parse.parse_qs(urllib.parse.urlsplit(path).query)
    return q.get("watch", [""])[0] in ("1", "true") or "/watch/" in path


class App:
    def __init__(self, registry, store, hub, faults, token, plain, server_address, log,
                 verbose=False, sim_ops=None, rbac=None):
        self.registry = registry
        self.store = store
        self.hub = hub
        self.faults = faults
        self.token = token
        self.plain = plain
        self.server_address = server_address
        self.log = log
        self.verbose = verbose
        self.sim_ops = sim_ops          # SimOps: /sim/* handlers
        self.rbac = rbac                # rbac.Rbac: ServiceAccount tokens, authorization
        self.abort_drops = False

    def access_log(self, req, msg):
        if self.verbose:
            self.log("%s %s" % (req.client_address[0], msg))

    # -- entry point ------------------------------------------------------------------
    def handle(self, req):
        req.body_digest, req.status_sent = None, None
        req.lose_response, req.status_served = None, None
        t0 = time.monotonic()
        etcd = getattr(self.store, "etcd", None)
        if etcd is not None:
            etcd.thread_spent(reset=True)
        try:
            self._handle(req)
        finally:
            took = time.monotonic() - t0
            if took >= SLOW_REQUEST_S and not _is_watch(req.path):
                calls, in_etcd = etcd.thread_spent() if etcd is not None else (0, 0.0)
                self.log("slow request: %s %s took %.1f s, %.1f s of it in %d etcd call(s)" % (
                    req.command, req.path, took, in_etcd, calls))
            if req.command in WRITE_METHODS and not req.path.startswith("/sim/"):
                self.faults.record_write(req.command, req.path, req.body_digest, req.status_sent,
                                         req.headers.get("User-Agent", ""), req.status_served)

    def _handle(self, req):
        url = urllib.parse.urlsplit(req.path)
        path = url.path
        q = {k: v[0] for k, v in urllib.parse.parse_qs(url.query, keep_blank_values=True).items()}
        try:
            req.user = self._authenticate(req)
            if req.user is None and path not in PUBLIC_PATHS:
                raise errors.unauthorized()
            if path.startswith("/sim/"):
                if not req.user.is_master:
                    raise errors.ApiError(403, "Forbidden", 'forbidden: User "%s" cannot %s path "%s"'
                                          % (req.user.name, req.command.lower(), path))
                self.faults.count(req.command, "sim")
                return self.sim_ops.handle(req, path, q)
            if self.faults.latency_ms:
                time.sleep(self.faults.latency_ms / 1000.0)
            if req.user is not None and not req.user.is_master and self.rbac:
                self.rbac.authorize(req.user, rbac_mod.request_attributes(req.command, path, q),
                                    req.headers.get("User-Agent", ""))
            fault = self.faults.check(req.command, req.path)
            if fault is not None and getattr(fault, "after", False):
                req.lose_response = fault   # served, then answered with the fault (server.py)
            elif fault is not None:
                if req.command in ("POST", "PUT", "PATCH"):
                    req.read_body()
                raise fault
            self._route(req, path, q)
        except errors.ApiError as e:
            if e.code >= 500 or self.verbose:
                self.log("%s %s -> %d %s" % (req.command, req.path, e.code, e.message))
            req.discard_body()   # an unread body would corrupt the next keep-alive request
            req.send_error_status(e)
        except (ConnectionError, TimeoutError):
            req.close_connection = True
        except EtcdError as e:
            # A storage failure outside the store's own mapping (store.etcd_errors).
            self.log("%s %s -> storage error %s" % (req.command, req.path, e))
            req.discard_body()
            req.send_error_status(errors.unavailable("storage is unavailable: %s" % e)
                                  if isinstance(e, EtcdUnavailable) else errors.internal("storage error: %s" % e))
        except Exception as e:  # never let a bug kill the connection thread silently
            self.log("internal error serving %s %s: %s\n%s" % (req.command, req.path, e,
                                                              traceback.format_exc()))
            try:
                req.discard_body()
                req.send_error_status(errors.internal(str(e)))
            except OSError:
                pass

    def _authenticate(self, req):
        """The user of the request (rbac.User), or None."""
        if self.plain:
            return rbac_mod.ADMIN
        auth = req.headers.get("Authorization", "")
        if auth.startswith("Bearer "):
            tok = auth[7:].strip()
            if hmac.compare_digest(tok.encode(), self.token.encode()):
                return rbac_mod.ADMIN
            # kube-apiserver answers 401 to a bad token even with a good certificate
            return self.rbac.user_of_token(tok) if self.rbac else None
        cert = req.peer_certificate()
        return rbac_mod.Rbac.user_of_cert(cert) if cert else None

    # -- routing -----------------------------------------------------------------------
    def _route(self, req, path, q):
        if path in ("/healthz", "/livez", "/readyz"):
            self.faults.count(req.command, "health")
            return req.send_bytes(200, b"ok", "text/plain; charset=utf-8")
        if path == "/version":
            self.faults.count(req.command, "discovery")
            return req.send_json(200, discovery.VERSION)
        if path in ("/api", "/apis"):
            self.faults.count(req.command, "discovery")
            return self._root_discovery(req, path)
        if path.startswith("/openapi/"):
            self.faults.count(req.command, "openapi")
            return self._openapi(req, path)
        segs = [urllib.parse.unquote(s) for s in path.strip("/").split("/")]
        if len(segs) >= 2 and segs[0] == "api" and segs[1] == "v1":
            return self._resource(req, "", "v1", segs[2:], q)
        if len(segs) >= 3 and segs[0] == "apis":
            return self._resource(req, segs[1], segs[2], segs[3:], q)
        if len(segs) == 2 and segs[0] == "apis":
            doc = discovery.api_group(self.registry, segs[1])
            if doc:
                return req.send_json(200, doc)
        raise errors.path_not_found()

    def _root_discovery(self, req, path):
        core = path == "/api"
        if discovery.wants_aggregated(req.headers.get("Accept")):
            return req.send_json(200, discovery.aggregated(self.registry, core),
                                 {"Vary": "Accept"}, discovery.AGGREGATED_CT)
        doc = discovery.api_versions(self.server_address) if core else \
            discovery.api_group_list(self.registry)
        req.send_json(200, doc, {"Vary": "Accept"})

    def _openapi(self, req, path):
        if path.rstrip("/") == "/openapi/v3":
            return req.send_json(200, discovery.openapi_index(self.registry))
        if path.startswith("/openapi/v3/"):
            parts = path[len("/openapi/v3/"):].strip("/").split("/")
            doc = None
            if parts[:2] == ["api", "v1"] and len(parts) == 2:
                doc = discovery.openapi_gv(self.registry, "", "v1")
            elif parts[0] == "apis" and len(parts) == 3:
                doc = discovery.openapi_gv(self.registry, parts[1], parts[2])
            if doc is not None:
                return req.send_json(200, doc)
        raise errors.path_not_found()

    def _resource(self, req, group, version, rest, q):
        method = req.command
        if rest and rest[0] == "watch":
            q["watch"] = "true"
            rest = rest[1:]
        if not rest:
            self.faults.count(method, "discovery")
            doc = discovery.resource_list(self.registry, group, version)
            if doc is None or method != "GET":
                raise errors.path_not_found()
            return req.send_json(200, doc)
        ns = None
        if rest[0] == "namespaces" and len(rest) >= 3 and \
                not (group == "" and len(rest) == 3 and rest[2] in ("status", "finalize")):
            ns, rest = rest[1], rest[2:]
        if len(rest) > 3:
            raise errors.path_not_found()
        rt = self.registry.lookup(group, version, rest[0])
        if rt is None:
            raise errors.path_not_found()
        name = rest[1] if len(rest) > 1 else None
        sub = rest[2] if len(rest) > 2 else None
        if (ns is not None and not rt.namespaced) or (name is not None and rt.namespaced and ns is None):
            raise errors.path_not_found()
        if sub is not None and sub not in rt.subresources:
            raise errors.path_not_found()
        if name is None:
            return self._collection(req, rt, ns, q)
        if sub is None:
            return self._object(req, rt, ns, name, q)
        return self._subresource(req, rt, ns, name, sub, q)

    # -- collections ---------------------------------------------------------------
    def _collection(self, req, rt, ns, q):
        m = req.command
        if m == "GET":
            fmt, fmt_av = negotiate(req.headers.get("Accept"))
            pred = Predicate(q.get("labelSelector"), q.get("fieldSelector"), rt.group, rt.plural)
            include = q.get("includeObject") or "Metadata"
            if q.get("watch") in ("true", "1"):
                self.faults.count(m, "watch")
                return watchserve.serve(self, req, rt, ns, q, pred, fmt, include)
            self.faults.count(m, "list")
            res = lists.list_objects(self.store, rt, ns, q, pred)
            return req.send_json(200, self._list_doc(rt, res, fmt, fmt_av, include))
        if m in ("POST", "DELETE") and rt.namespaced and ns is None:
            raise errors.method_not_allowed()   # writes need /namespaces/<ns>/...
        if m == "POST":
            self.faults.count(m, "create")
            body = self._body(req)
            opts = self._write_opts(req, q)
            obj = self.store.create(rt, ns, body, opts)
            return req.send_json(201, obj, self._warnings(opts))
        if m == "DELETE":
            self.faults.count(m, "deletecollection")
            return self._delete_collection(req, rt, ns, q)
        raise errors.method_not_allowed()

    def _list_doc(self, rt, res, fmt, fmt_av, include):
        if fmt == "table":
            return tables.table(rt, res.items, res.rv, res.cont, res.remaining, include,
                                api_version=fmt_av)
        md = {"resourceVersion": str(res.rv)}
        if res.cont:
            md["continue"] = res.cont
        if res.remaining is not None:
            md["remainingItemCount"] = res.remaining
        if fmt == "partial":
            return {"kind": "PartialObjectMetadataList", "apiVersion": fmt_av, "metadata": md,
                    "items": [tables.partial_metadata(o, fmt_av) for o in res.items]}
        return {"kind": rt.list_kind, "apiVersion": rt.api_version, "metadata": md,
                "items": res.items}

    def _delete_collection(self, req, rt, ns, q):
        options = self._delete_options(req, q)
        opts = self._write_opts(req, q)
        pred = Predicate(q.get("labelSelector"), q.get("fieldSelector"), rt.group, rt.plural)
        res = lists.list_objects(self.store, rt, ns, {}, pred)
        deleted = []
        for o in res.items:
            md = meta(o)
            try:
                out, _ = self.store.delete(rt, md.get("namespace"), md["name"], options, opts)
            except errors.ApiError as e:
                if e.code == 404:
                    continue
                raise
            o.setdefault("kind", rt.kind)
            o.setdefault("apiVersion", rt.api_version)
            deleted.append(o if out.get("kind") == "Status" else out)
        req.send_json(200, {"kind": rt.list_kind, "apiVersion": rt.api_version,
                            "metadata": {"resourceVersion": str(res.rv)}, "items": deleted})

    # -- objects ---------------------------------------------------------------------
    def _object(self, req, rt, ns, name, q):
        m = req.command
        if m == "GET":
            if q.get("watch") in ("true", "1"):
                fs = q.get("fieldSelector")
                q["fieldSelector"] = "metadata.name=%s" % name + ("," + fs if fs else "")
                return self._collection(req, rt, ns, q)
            self.faults.count(m, "get")
            fmt, fmt_av = negotiate(req.headers.get("Accept"))
            obj = self.store.get(rt, ns, name)
            return req.send_json(200, self._one(rt, obj, fmt, fmt_av, q))
        if m == "PUT":
            self.faults.count(m, "update")
            body = self._body(req)
            opts = self._write_opts(req, q)
            obj, code = self.store.update(rt, ns, name, body, opts)
            return req.send_json(code, obj, self._warnings(opts))
        if m == "PATCH":
            self.faults.count(m, "patch")
            return self._patch(req, rt, ns, name, q, None)
        if m == "DELETE":
            self.faults.count(m, "delete")
            options = self._delete_options(req, q)
            opts = self._write_opts(req, q)
            opts.dry_run = opts.dry_run or options.get("dryRun") == ["All"]
            out, code = self.store.delete(rt, ns, name, options, opts)
            if options.get("orphanDependents") is False and out.get("kind") != "Status" and \
                    meta(out).get("deletionTimestamp"):
                code = 202
            return req.send_json(code, out)
        raise errors.method_not_allowed()

    def _one(self, rt, obj, fmt, fmt_av, q):
        if fmt == "table":
            return tables.table(rt, [obj], meta(obj).get("resourceVersion"), None, None,
                                q.get("includeObject") or "Metadata", api_version=fmt_av)
        if fmt == "partial":
            return tables.partial_metadata(obj, fmt_av)
        return obj

    def _patch(self, req, rt, ns, name, q, sub):
        ctype = (_media(req.headers.get("Content-Type")) or [("", {})])[0][0]
        raw = req.read_body()
        if ctype not in PATCH_TYPES:
            raise errors.unsupported_media(
                "the body of the request was in an unknown format - accepted media types include: "
                "application/json-patch+json, application/merge-patch+json, "
                "application/apply-patch+yaml" + ("" if rt.is_custom else
                                                  ", application/strategic-merge-patch+json"))
        opts = self._write_opts(req, q, patch_type=ctype)
        if ctype == "application/apply-patch+yaml":
            config = self._decode(raw, "application/yaml")
            obj, code = self.store.apply(rt, ns, name, config, opts, sub)
        else:
            obj, code = self.store.patch(rt, ns, name, ctype, raw, opts, sub)
        req.send_json(code, obj, self._warnings(opts))

    # -- subresources ---------------------------------------------------------------
    def _subresource(self, req, rt, ns, name, sub, q):
        m = req.command
        verb = {"GET": "get", "PUT": "update", "PATCH": "patch", "POST": "create"}.get(m, m.lower())
        self.faults.count(m, verb)
        if sub == "status":
            if m == "GET":
                fmt, fmt_av = negotiate(req.headers.get("Accept"))
                return req.send_json(200, self._one(rt, self.store.get(rt, ns, name), fmt, fmt_av, q))
            if m == "PUT":
                body = self._body(req)
                opts = self._write_opts(req, q)
                obj, code = self.store.update(rt, ns, name, body, opts, sub="status")
                return req.send_json(code, obj, self._warnings(opts))
            if m == "PATCH":
                return self._patch(req, rt, ns, name, q, "status")
        if sub == "finalize" and m == "PUT":
            body = self._body(req)
            opts = self._write_opts(req, q)
            obj, code = self.store.update(rt, ns, name, body, opts, sub="finalize")
            return req.send_json(code, obj)
        if sub == "scale" and m in ("GET", "PUT", "PATCH"):
            return self._scale(req, rt, ns, name, q)
        if sub == "eviction" and m == "POST":
            return self._evict(req, rt, ns, name, q)
        if sub == "binding" and m == "POST":
            return self._bind(req, rt, ns, name, q)
        if sub == "token" and m == "POST" and self.rbac:
            return self._token_request(req, rt, ns, name)
        raise errors.method_not_allowed()

    @staticmethod
    def _path_get(obj, path):
        cur = obj
        for p in (path or "").strip(".").split("."):
            if not isinstance(cur, dict) or p not in cur:
                return None
            cur = cur[p]
        return cur

    def _scale_of(self, rt, obj):
        md = meta(obj)
        if rt.is_custom:
            sel = self._path_get(obj, rt.scale.get("labelSelectorPath")) or ""
        else:
            ml = ((obj.get("spec") or {}).get("selector") or {}).get("matchLabels") or {}
            sel = ",".join("%s=%s" % kv for kv in sorted(ml.items()))
        return {"kind": "Scale", "apiVersion": "autoscaling/v1",
                "metadata": {k: md[k] for k in ("name", "namespace", "uid", "resourceVersion",
                                                "creationTimestamp") if k in md},
                "spec": {"replicas": self._path_get(obj, rt.scale.get("specReplicasPath")) or 0},
                "status": {"replicas": self._path_get(obj, rt.scale.get("statusReplicasPath")) or 0,
                           "selector": sel}}

    def _scale(self, req, rt, ns, name, q):
        if req.command == "GET":
            return req.send_json(200, self._scale_of(rt, self.store.get(rt, ns, name)))
        raw = req.read_body()
        ctype = (_media(req.headers.get("Content-Type")) or [("", {})])[0][0]
        opts = self._write_opts(req, q)

        def transform(old):
            cur = self._scale_of(rt, old)
            if req.command == "PUT":
                scale = self._decode(raw, ctype)
            else:
                if ctype == "application/apply-patch+yaml":
                    raise errors.unsupported_media("apply is not supported on scale here")
                scale = apply_patch(ctype, cur, raw)
            rv = meta(scale).get("resourceVersion")
            replicas = (scale.get("spec") or {}).get("replicas")
            if not isinstance(replicas, int) or replicas < 0:
                raise errors.invalid(rt, name, [("FieldValueInvalid", "spec.replicas",
                                                 "Invalid value: %s: must be greater than or equal "
                                                 "to 0" % json.dumps(replicas))])
            new = copy.deepcopy(old)
            cur = new
            parts = rt.scale.get("specReplicasPath", ".spec.replicas").strip(".").split(".")
            for p in parts[:-1]:
                cur = cur.setdefault(p, {})
            cur[parts[-1]] = replicas
            meta(new)["resourceVersion"] = rv or meta(old).get("resourceVersion")
            return new, bool(rv)
        obj, _ = self.store._guaranteed_update(rt, ns, name, transform, opts)
        req.send_json(200, self._scale_of(rt, obj))

    def _evict(self, req, rt, ns, name, q):
        """As kube-apiserver's eviction REST: a pod covered by one PodDisruptionBudget goes only
        if the budget's status (from the disruption controller) allows a disruption, which the
        eviction takes by lowering status.disruptionsAllowed with a compare-and-swap before the
        delete, so two evictions racing cannot both spend the last one. A pod that is not Ready
        goes while the budget is met (unhealthyPodEvictionPolicy IfHealthyBudget, the default)."""
        req.read_body()   # the Eviction's DeleteOptions are not used (kubectl drain sends protobuf)
        pod = self.store.get(rt, ns, name)
        labels = meta(pod).get("labels") or {}
        pdbt = self.registry.lookup("policy", "v1", "poddisruptionbudgets")
        pdbs = [p for p in lists.list_objects(self.store, pdbt, ns, {}, Predicate("", "", "policy",
                                                                                   pdbt.plural)).items
                if selector_matches((p.get("spec") or {}).get("selector"), labels)]
        if len(pdbs) > 1:
            raise errors.ApiError(500, "InternalError", "This pod has more than one PodDisruptionBudget, "
                                  "which the eviction subresource does not support.")
        if pdbs:
            pdb = pdbs[0]
            st = pdb.get("status") or {}
            ready = any(c.get("type") == "Ready" and c.get("status") == "True"
                        for c in (pod.get("status") or {}).get("conditions") or [])

            def refuse(processing=False):
                # As upstream's eviction REST: TooManyRequests with retryAfterSeconds 0, so no
                # Retry-After header (client-go would otherwise retry it by itself, 10 times),
                # and the budget's figures in the cause.
                return errors.ApiError(429, "TooManyRequests", "Cannot evict pod as it would violate "
                                       "the pod's disruption budget.",
                                       {"causes": [{"reason": "DisruptionBudget", "message":
                                                    "The disruption budget %s is still being processed by "
                                                    "the server." % meta(pdb).get("name") if processing else
                                                    "The disruption budget %s needs %s healthy pods and "
                                                    "has %s currently" % (meta(pdb).get("name"),
                                                                          st.get("desiredHealthy", 0),
                                                                          st.get("currentHealthy", 0))}]})
            if st.get("observedGeneration", 0) < meta(pdb).get("generation", 1):
                raise refuse(processing=True)
            if not ready:
                if st.get("currentHealthy", 0) < st.get("desiredHealthy", 0):
                    raise refuse()
            else:
                def spend(old):
                    cur = old.get("status") or {}
                    if cur.get("disruptionsAllowed", 0) < 1:
                        raise refuse()
                    new = copy.deepcopy(old)
                    new["status"]["disruptionsAllowed"] = cur["disruptionsAllowed"] - 1
                    new["status"].setdefault("disruptedPods", {})[name] = \
                        time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
                    meta(new).pop("resourceVersion", None)   # re-read and re-check on a lost race
                    return new, False
                self.store._guaranteed_update(pdbt, ns, meta(pdb)["name"], spend, WriteOpts(), sub="status")
        self.store.delete(rt, ns, name, {}, WriteOpts())
        req.send_json(201, {"kind": "Status", "apiVersion": "v1", "metadata": {},
                            "status": "Success", "code": 201})

    def _token_request(self, req, rt, ns, name):
        """TokenRequest (authentication.k8s.io/v1): a token for ServiceAccount ns/name."""
        body = self._body(req) or {}
        spec = body.get("spec") or {}
        exp = spec.get("expirationSeconds", 3600)
        if not isinstance(exp, int) or exp < 600:
            raise errors.invalid_plain("TokenRequest", name, [
                ("FieldValueInvalid", "spec.expirationSeconds",
                 "Invalid value: %s: may not specify a duration less than 10 minutes" % json.dumps(exp))],
                group="authentication.k8s.io")
        sa = self.store.get(rt, ns, name)
        bound = spec.get("boundObjectRef")
        token, expires = self.rbac.issue_token(ns, sa, exp, spec.get("audiences") or [], bound)
        out = {"kind": "TokenRequest", "apiVersion": "authentication.k8s.io/v1",
               "metadata": {"name": name, "namespace": ns,
                            "creationTimestamp": objects.now_rfc3339()},
               "spec": {"audiences": spec.get("audiences") or [rbac_mod.ISSUER],
                        "expirationSeconds": exp, "boundObjectRef": bound},
               "status": {"token": token,
                          "expirationTimestamp": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(expires))}}
        req.send_json(201, out)

    def _bind(self, req, rt, ns, name, q):
        body = self._body(req)
        node = ((body or {}).get("target") or {}).get("name")
        if not node:
            raise errors.invalid(rt, name, [("FieldValueRequired", "target.name", "Required value")])

        def transform(old):
            if (old.get("spec") or {}).get("nodeName"):
                raise errors.conflict(rt, name, "pod %s is already assigned to node \"%s\""
                                      % (name, old["spec"]["nodeName"]))
            new = copy.deepcopy(old)
            new.setdefault("spec", {})["nodeName"] = node
            return new, False
        # binding bypasses the pod update rules, so write through the raw CAS path
        obj, kv = self.store.read(rt, ns, name)
        if obj is None:
            raise errors.not_found(rt, name)
        new, _ = transform(obj)
        ok, rev, _ = self.store.etcd.cas_put(rt.key(ns, name), objects.encode(new), kv.mod_rev)
        if not ok:
            raise errors.conflict(rt, name)
        req.send_json(201, {"kind": "Status", "apiVersion": "v1", "metadata": {},
                            "status": "Success", "code": 201})

    # -- request decoding --------------------------------------------------------------
    def _decode(self, raw, ctype):
        if not raw:
            raise errors.bad_request("the request body is empty")
        try:
            return json.loads(raw)
        except ValueError as e:
            if ctype in ("application/yaml", "application/x-yaml", "application/apply-patch+yaml"):
                try:
                    return yaml_lite.load(raw)
                except yaml_lite.YamlError as ye:
                    raise errors.bad_request("error decoding YAML: %s" % ye)
            raise errors.bad_request("couldn't get version/kind; json parse error: %s" % e)

    def _body(self, req):
        raw = req.read_body()
        ctype = (_media(req.headers.get("Content-Type")) or [("application/json", {})])[0][0]
        if ctype == "application/vnd.kubernetes.protobuf":
            try:
                return protobuf.decode(raw)
            except (protobuf.ProtoError, UnicodeDecodeError) as e:
                raise errors.unsupported_media(str(e))
        if ctype not in ("application/json", "application/yaml", "application/x-yaml", "*/*", ""):
            raise errors.unsupported_media("the body of the request was in an unknown format - "
                                           "accepted media types include: application/json, "
                                           "application/yaml")
        obj = self._decode(raw, ctype)
        if not isinstance(obj, dict):
            raise errors.bad_request("the body of the request must be a JSON object")
        return obj

    def _write_opts(self, req, q, patch_type=None):
        fv = q.get("fieldValidation", "")
        if fv not in ("", "Ignore", "Warn", "Strict"):
            raise errors.bad_request('fieldValidation %s is invalid: valid values are "Ignore", '
                                     '"Warn", "Strict"' % fv)
        dry = q.get("dryRun")
        if dry not in (None, "", "All"):
            raise errors.bad_request("dryRun %s is invalid: only All is supported" % dry)
        force = q.get("force")
        if force is not None and patch_type != "application/apply-patch+yaml":
            raise errors.invalid_plain("PatchOptions", "", [
                ("FieldValueForbidden", "force", "Forbidden: may not be specified for non-apply "
                 "patch")], group="meta.k8s.io")
        manager = q.get("fieldManager")
        if manager is not None and len(manager) > 128:
            raise errors.invalid_plain("PatchOptions", "", [
                ("FieldValueTooLong", "fieldManager", "Too long: may not be longer than 128")],
                group="meta.k8s.io")
        if not manager and patch_type != "application/apply-patch+yaml":
            ua = req.headers.get("User-Agent", "")
            manager = ua.split("/", 1)[0][:128] if ua else "unknown"
        opts = WriteOpts(manager, fv or "Warn", dry == "All", force == "true")
        user = getattr(req, "user", None)
        if self.rbac and user is not None and not user.is_master:
            agent = req.headers.get("User-Agent", "")
            opts.admit = lambda rt, obj: self.rbac.check_escalation(user, rt, meta(obj).get("namespace"),
                                                                    obj, agent)
        return opts

    def _delete_options(self, req, q):
        raw = req.read_body()
        options = {}
        if raw.strip():
            try:
                options = json.loads(raw)
            except ValueError as e:
                raise errors.bad_request("couldn't decode DeleteOptions: %s" % e)
            if not isinstance(options, dict):
                raise errors.bad_request("DeleteOptions must be a JSON object")
        if q.get("propagationPolicy"):
            options["propagationPolicy"] = q["propagationPolicy"]
        if q.get("orphanDependents"):
            options["orphanDependents"] = q["orphanDependents"] == "true"
        if q.get("dryRun"):
            options["dryRun"] = [q["dryRun"]]
        return options

    @staticmethod
    def _warnings(opts):
        if not opts.warnings:
            return None
        return {"Warning": ['299 - %s' % json.dumps(w) for w in opts.warnings]}
