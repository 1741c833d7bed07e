"""Object storage with kube-apiserver semantics on top of etcd (https://kubernetes.io/docs/reference/using-api/api-concepts/).

Keys are /registry/[<group>/]<plural>/[<ns>/]<name>, values the object JSON without
resourceVersion; resourceVersion is the key's mod_revision.  Every write is an etcd
transaction comparing mod_revision (create: create_revision == 0), which gives
optimistic concurrency (409 Conflict) for free.  Writes without a client-supplied
resourceVersion retry on a lost race, like the apiserver's GuaranteedUpdate.

The write pipeline (create, update, patch, apply all end in _prepare_update or
_prepare_create): generic metadata rules, status-subresource rules, type strategy,
CR structural schema (prune/default/validate), generation, finalizers,
managedFields, no-op detection, then the CAS.
"""

import copy
import threading

from . import apply as ssa
from . import errors, objects, schema, strategy
from .etcd import EtcdCompacted, EtcdError, EtcdFutureRevision, EtcdUnavailable
from .objects import meta
from .patch import apply_patch

MAX_RETRIES = 16


class WriteOpts:
    """Per-request write options (query parameters of the request)."""

    def __init__(self, manager=None, validation=None, dry_run=False, force=None):
        self.manager = manager
        self.validation = validation or "Warn"
        self.dry_run = dry_run
        self.force = force
        self.warnings = []
        self.admit = None       # callable(rt, obj): admission after validation (RBAC escalation)


def etcd_errors(fn):
    """Map storage failures to Status errors once, at the edge of the store."""
    def wrapper(*a, **kw):
        try:
            return fn(*a, **kw)
        except EtcdUnavailable as e:
            raise errors.unavailable("storage is unavailable: %s" % e)
        except (EtcdCompacted, EtcdFutureRevision):
            raise
        except EtcdError as e:
            if "request is too large" in str(e):
                raise errors.ApiError(413, "RequestEntityTooLarge",
                                      "Request entity too large: etcdserver: request is too large")
            if e.http_status in (503, 504) or e.code in (4, 14):
                raise errors.timeout("etcd request failed: %s" % e)
            raise errors.internal("etcd: %s" % e)
    wrapper.__name__ = fn.__name__
    wrapper.__doc__ = fn.__doc__
    return wrapper


class Store:
    def __init__(self, etcd, registry, cel_eval=None, log=None):
        self.etcd = etcd
        self.registry = registry
        self.cel_eval = cel_eval
        self._log = log or (lambda *a: None)
        self.after_write = []     # callbacks (rt, event, obj): CRD installs, namespace GC
        self._ns_cache_lock = threading.Lock()

    # -- reads ------------------------------------------------------------------
    def _decode(self, rt, kv, rv=None):
        try:
            obj = objects.decode(kv.value, rv or kv.mod_rev)
        except (ValueError, UnicodeDecodeError, AttributeError):
            raise errors.internal("object %s in etcd is not JSON written by this simulator" % kv.key)
        if rt.is_custom:
            obj["apiVersion"] = rt.api_version  # conversion strategy None
        return obj

    @etcd_errors
    def read(self, rt, ns, name):
        """(object, kv) or (None, None)."""
        _, kv = self.etcd.get(rt.key(ns, name))
        if kv is None:
            return None, None
        return self._decode(rt, kv), kv

    def get(self, rt, ns, name):
        obj, _ = self.read(rt, ns, name)
        if obj is None:
            raise errors.not_found(rt, name)
        return obj

    # -- create ------------------------------------------------------------------
    def _check_namespace(self, rt, ns, name):
        if not rt.namespaced:
            return
        nst = self.registry.lookup("", "v1", "namespaces")
        nsobj, _ = self.read(nst, None, ns)
        if nsobj is None:
            raise errors.not_found(nst, ns)
        if meta(nsobj).get("deletionTimestamp"):
            raise errors.forbidden(
                rt, name, "unable to create new content in namespace %s "
                "because it is being terminated" % ns,
                [{"reason": "NamespaceTerminating", "message": "namespace %s is being terminated"
                  % ns, "field": "metadata.namespace"}])

    def _check_body_identity(self, rt, ns, obj, name=None):
        if not isinstance(obj, dict):
            raise errors.bad_request("the body of the request must be a JSON object")
        av, kind = obj.get("apiVersion"), obj.get("kind")
        if av and av != rt.api_version:
            raise errors.bad_request("the API version in the data (%s) does not match the expected "
                                     "API version (%s)" % (av, rt.api_version))
        if kind and kind != rt.kind:
            raise errors.bad_request("the kind in the data (%s) does not match the expected kind "
                                     "(%s)" % (kind, rt.kind))
        obj["apiVersion"], obj["kind"] = rt.api_version, rt.kind
        md = meta(obj)
        if rt.namespaced:
            if md.get("namespace") and ns and md["namespace"] != ns:
                raise errors.bad_request("the namespace of the provided object does not match the "
                                         "namespace sent on the request")
            md["namespace"] = ns
        else:
            md.pop("namespace", None)
        if name is not None and md.get("name") and md["name"] != name:
            raise errors.bad_request("the name of the object (%s) does not match the name on the "
                                     "URL (%s)" % (md["name"], name))
        if name is not None:
            md["name"] = name

    def _schema_pass(self, rt, obj, old, opts):
        """CR pruning/defaulting/validation and fieldValidation for unknown fields."""
        unknown = []
        if rt.is_custom and rt.schema:
            schema.prune_and_default(rt.schema, obj, unknown)
        elif not rt.is_custom:
            allowed = strategy.allowed_top_fields(rt)
            unknown = schema.unknown_top_fields(obj, allowed)
            for f in unknown:
                if "." not in f:
                    obj.pop(f, None)
                else:
                    meta(obj).pop(f.split(".", 1)[1], None)
        if unknown:
            if opts.validation == "Strict":
                msg = ", ".join('unknown field "%s"' % f for f in unknown)
                raise errors.bad_request("strict decoding error: " + msg)
            if opts.validation == "Warn":
                opts.warnings += ['unknown field "%s"' % f for f in unknown]

    def _validate(self, rt, obj, old, sub=None):
        causes = strategy.validate(rt, obj, old, sub)
        if rt.is_custom and rt.schema:
            v = schema.Validator(self.cel_eval)
            v.validate_root(rt.schema, obj, old)
            causes += v.causes
        if causes:
            raise errors.invalid(rt, meta(obj).get("name", ""), causes)

    def _prepare_create(self, rt, ns, obj, opts, operation="Update", apply_fields=None):
        self._check_body_identity(rt, ns, obj)
        md = meta(obj)
        if md.get("resourceVersion"):
            raise errors.ApiError(500, "InternalError",
                                  "resourceVersion should not be set on objects to be created")
        if not md.get("name") and not md.get("generateName"):
            raise errors.invalid(rt, "", [("FieldValueRequired", "metadata.name",
                                           "Required value: name or generateName is required")])
        self._schema_pass(rt, obj, None, opts)
        md = meta(obj)
        for f in ("deletionTimestamp", "deletionGracePeriodSeconds", "selfLink"):
            md.pop(f, None)
        md["uid"] = objects.new_uid()
        md["creationTimestamp"] = objects.now_rfc3339()
        if rt.tracks_generation:
            md["generation"] = 1
        else:
            md.pop("generation", None)
        if rt.is_custom and rt.has_status:
            obj.pop("status", None)
        strategy.on_create(rt, obj)
        if md.get("name"):
            problem = objects.name_problem(rt, md["name"])
            if problem:
                raise errors.invalid(rt, md["name"], [("FieldValueInvalid", "metadata.name",
                                                       'Invalid value: "%s": %s' % (md["name"], problem))])
        objects.normalize_meta(obj, not rt.is_custom)
        self._validate(rt, obj, None)
        if opts.admit:
            opts.admit(rt, obj)
        mf = md.get("managedFields")
        md.pop("managedFields", None)
        if mf == []:
            pass  # explicitly empty: managedFields are not tracked for this write
        elif operation == "Apply":
            objects.set_managed(obj, opts.manager, "Apply", rt.api_version, apply_fields)
        else:
            fs = ssa.fieldset(_trackable(rt, obj), ssa.list_keys_for(rt))
            objects.set_managed(obj, opts.manager or "unknown", "Update", rt.api_version, fs)
        return obj

    @etcd_errors
    def create(self, rt, ns, obj, opts, operation="Update", apply_fields=None):
        obj = self._prepare_create(rt, ns, obj, opts, operation, apply_fields)
        md = meta(obj)
        self._check_namespace(rt, ns, md.get("name") or md.get("generateName"))
        gen_prefix = md.get("generateName") if not md.get("name") else None
        for attempt in range(5):
            if gen_prefix:
                md["name"] = objects.generate_name(gen_prefix)
                problem = objects.name_problem(rt, md["name"])
                if problem:
                    raise errors.invalid(rt, md["name"], [
                        ("FieldValueInvalid", "metadata.generateName",
                         'Invalid value: "%s": %s' % (gen_prefix, problem))])
            if opts.dry_run:
                return obj
            key = rt.key(ns, md["name"])
            ok, rev, _ = self.etcd.create(key, objects.encode(obj))
            if ok:
                md["resourceVersion"] = str(rev)
                self._notify(rt, "create", obj)
                return obj
            if not gen_prefix:
                raise errors.already_exists(rt, md["name"])
        raise errors.already_exists(rt, md["name"])

    # -- update ------------------------------------------------------------------
    def _prepare_update(self, rt, new, old, opts, sub, operation="Update", apply_fields=None):
        """Turn a client's desired object into the object to store (or raise)."""
        new_md, old_md = meta(new), meta(old)
        new["apiVersion"], new["kind"] = rt.api_version, rt.kind
        for f in ("name", "namespace"):
            if new_md.get(f, old_md.get(f)) != old_md.get(f):
                raise errors.invalid(rt, old_md.get("name"), [
                    ("FieldValueInvalid", "metadata." + f,
                     'Invalid value: "%s": field is immutable' % new_md.get(f))])
            if f in old_md:
                new_md[f] = old_md[f]
        if new_md.get("uid") and new_md["uid"] != old_md.get("uid"):
            raise errors.invalid(rt, old_md.get("name"), [
                ("FieldValueInvalid", "metadata.uid",
                 'Invalid value: "%s": field is immutable' % new_md["uid"])])
        client_mf = new_md.get("managedFields", None)
        mf_given = "managedFields" in new_md and client_mf != old_md.get("managedFields")
        if sub == "finalize":
            # namespaces/<n>/finalize only changes spec.finalizers
            fins = (new.get("spec") or {}).get("finalizers") or []
            rv = new_md.get("resourceVersion")
            new = copy.deepcopy(old)
            new.setdefault("spec", {})["finalizers"] = fins
            new_md = meta(new)
            if rv is not None:
                new_md["resourceVersion"] = rv
        elif sub == "status":
            # /status writes keep everything but status (status subresource)
            st = new.get("status", None)
            rv = new_md.get("resourceVersion")
            new = copy.deepcopy(old)
            new_md = meta(new)
            if st is None:
                new.pop("status", None)
            else:
                new["status"] = st
            if rv is not None:
                new_md["resourceVersion"] = rv
            if mf_given:
                new_md["managedFields"] = client_mf
            self._schema_pass(rt, new, old, opts)
        else:
            self._schema_pass(rt, new, old, opts)
            new_md = meta(new)
            for f in ("uid", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds",
                      "generation"):
                if f in old_md:
                    new_md[f] = old_md[f]
                else:
                    new_md.pop(f, None)
            if rt.has_status:
                if "status" in old:
                    new["status"] = copy.deepcopy(old["status"])
                else:
                    new.pop("status", None)
            strategy.on_update(rt, new, old, sub)
        # finalizers cannot be added once deletion started
        if old_md.get("deletionTimestamp"):
            added = [f for f in new_md.get("finalizers") or [] if f not in (old_md.get("finalizers") or [])]
            if added:
                raise errors.invalid(rt, old_md.get("name"), [
                    ("FieldValueForbidden", "metadata.finalizers",
                     "Forbidden: no new finalizers can be added if the object is being deleted, "
                     "found new finalizers []string{%s}" % ", ".join('"%s"' % f for f in added))])
        objects.normalize_meta(new, not rt.is_custom)
        self._validate(rt, new, old, sub)
        if opts.admit:
            opts.admit(rt, new)
        # generation: bump on changes outside metadata (and status when it is a subresource)
        if rt.tracks_generation and sub is None and old_md.get("generation"):
            def body(o):
                return {k: v for k, v in o.items() if k not in ("metadata", "apiVersion", "kind")
                        and not (k == "status" and rt.has_status)}
            if body(new) != body(old):
                new_md["generation"] = old_md["generation"] + 1
        # managedFields
        if mf_given:
            base = client_mf or []
        else:
            base = old_md.get("managedFields") or []
        if objects.without_volatile(new) == objects.without_volatile(old) and not mf_given:
            new_md["managedFields"] = old_md.get("managedFields")
            if new_md["managedFields"] is None:
                new_md.pop("managedFields")
            return new, True
        new_md["managedFields"] = copy.deepcopy(base)
        if mf_given and client_mf == []:
            new_md.pop("managedFields", None)
        elif operation == "Apply":
            objects.set_managed(new, opts.manager, "Apply", rt.api_version, apply_fields,
                                subresource=sub, replace=True)
        else:
            fs = objects.changed_fieldset(_trackable(rt, old, sub), _trackable(rt, new, sub))
            objects.set_managed(new, opts.manager or "unknown", "Update", rt.api_version, fs,
                                subresource=sub)
        if not new_md.get("managedFields"):
            new_md.pop("managedFields", None)
        return new, False

    @etcd_errors
    def _guaranteed_update(self, rt, ns, name, transform, opts, sub=None, create=None,
                           operation="Update", apply_fields=None):
        """Read-modify-CAS loop.  transform(old) -> (desired, strict) where strict means
        the client pinned a resourceVersion (a lost race is then a 409, not a retry)."""
        key = rt.key(ns, name)
        for attempt in range(MAX_RETRIES):
            _, kv = self.etcd.get(key)
            if kv is None:
                if create is not None:
                    return create()
                raise errors.not_found(rt, name)
            old = self._decode(rt, kv)
            desired, strict = transform(copy.deepcopy(old))
            rv = meta(desired).get("resourceVersion")
            if rv and rv != str(kv.mod_rev):
                raise errors.conflict(rt, name)
            if not rv and rt.is_custom and strict is None:
                raise errors.invalid(rt, name, [("FieldValueInvalid", "metadata.resourceVersion",
                                                 "Invalid value: 0x0: must be specified for an "
                                                 "update")])
            new, noop = self._prepare_update(rt, desired, old, opts, sub, operation, apply_fields)
            if noop:
                return old, 200
            if opts.dry_run:
                meta(new)["resourceVersion"] = str(kv.mod_rev)
                return new, 200
            nmd = meta(new)
            if nmd.get("deletionTimestamp") and not nmd.get("finalizers") and \
                    not _ns_finalizers(rt, new):
                ok, rev, _ = self.etcd.cas_delete(key, kv.mod_rev)
                if ok:
                    nmd["resourceVersion"] = str(rev)
                    self._notify(rt, "delete", new)
                    return new, 200
            else:
                ok, rev, _ = self.etcd.cas_put(key, objects.encode(new), kv.mod_rev)
                if ok:
                    nmd["resourceVersion"] = str(rev)
                    self._notify(rt, "update", new)
                    return new, 200
            if strict:
                raise errors.conflict(rt, name)
        raise errors.conflict(rt, name)

    def update(self, rt, ns, name, body, opts, sub=None):
        """PUT."""
        self._check_body_identity(rt, ns, body, name)
        strict = bool(meta(body).get("resourceVersion"))

        def transform(old):
            return copy.deepcopy(body), (True if strict else None)

        create = None
        if rt.create_on_update and sub is None:
            def create():
                b = copy.deepcopy(body)
                meta(b).pop("resourceVersion", None)
                return self.create(rt, ns, b, opts), 201
        return self._guaranteed_update(rt, ns, name, transform, opts, sub, create)

    def patch(self, rt, ns, name, ptype, raw, opts, sub=None):
        if ptype == "application/strategic-merge-patch+json" and rt.is_custom:
            raise errors.unsupported_media(
                "the body of the request was in an unknown format - accepted media types include: "
                "application/json-patch+json, application/merge-patch+json, "
                "application/apply-patch+yaml")

        def transform(old):
            cur_rv = meta(old).get("resourceVersion")
            new = apply_patch(ptype, old, raw)
            if not isinstance(new, dict):
                raise errors.bad_request("patch produced a non-object")
            md = meta(new)
            if md.get("resourceVersion") is None:
                md["resourceVersion"] = cur_rv  # a patch that removes the RV does not pin it
            return new, False

        return self._guaranteed_update(rt, ns, name, transform, opts, sub)

    def apply(self, rt, ns, name, config, opts, sub=None):
        """Server-side apply (create-or-merge; conflicts with other managers are not
        detected, fields this manager stopped applying are removed)."""
        if not opts.manager:
            raise errors.invalid_plain("PatchOptions", "", [
                ("FieldValueRequired", "fieldManager", "Required value: is required for apply "
                 "patch")], group="meta.k8s.io")
        if not isinstance(config, dict) or not config.get("apiVersion") or not config.get("kind"):
            raise errors.bad_request("invalid object type: apply patches need apiVersion and kind")
        self._check_body_identity(rt, ns, config, name)
        fields = ssa.apply_fieldset(rt, config)
        strict = bool(meta(config).get("resourceVersion"))

        def transform(old):
            return ssa.merge(rt, old, config, opts.manager, sub), strict

        def create():
            if sub is not None:
                raise errors.not_found(rt, name)
            obj = copy.deepcopy(config)
            return self.create(rt, ns, obj, opts, "Apply", fields), 201

        return self._guaranteed_update(rt, ns, name, transform, opts, sub, create, "Apply", fields)

    # -- delete ------------------------------------------------------------------
    @etcd_errors
    def delete(self, rt, ns, name, options, opts):
        key = rt.key(ns, name)
        options = options or {}
        pre = options.get("preconditions") or {}
        policy = options.get("propagationPolicy")
        if policy is None and options.get("orphanDependents") is not None:
            policy = "Orphan" if options["orphanDependents"] else "Background"
        if policy not in (None, "Background", "Foreground", "Orphan"):
            raise errors.invalid_plain("DeleteOptions", "", [
                ("FieldValueNotSupported", "propagationPolicy",
                 'Unsupported value: "%s": supported values: "Foreground", "Background", '
                 '"Orphan", "nil"' % policy)], group="meta.k8s.io")
        if rt.plural == "namespaces" and not rt.group and name in ("default", "kube-system",
                                                                 "kube-public"):
            raise errors.forbidden(rt, name, "this namespace may not be deleted")
        for attempt in range(MAX_RETRIES):
            _, kv = self.etcd.get(key)
            if kv is None:
                raise errors.not_found(rt, name)
            old = self._decode(rt, kv)
            md = meta(old)
            if pre.get("uid") and pre["uid"] != md.get("uid"):
                raise errors.conflict(rt, name, "Precondition failed: UID in precondition: %s, UID in "
                                      "object meta: %s" % (pre["uid"], md.get("uid")))
            if pre.get("resourceVersion") and pre["resourceVersion"] != str(kv.mod_rev):
                raise errors.conflict(rt, name, "Precondition failed: ResourceVersion in "
                                      "precondition: %s, ResourceVersion in object meta: %s"
                                      % (pre["resourceVersion"], kv.mod_rev))
            fins = list(md.get("finalizers") or [])
            if policy == "Foreground" and "foregroundDeletion" not in fins:
                fins.append("foregroundDeletion")
            if policy == "Orphan" and "orphan" not in fins:
                fins.append("orphan")
            if fins or _ns_finalizers(rt, old):
                if md.get("deletionTimestamp") and fins == (md.get("finalizers") or []):
                    return old, 200   # already deleting: nothing changes
                new = copy.deepcopy(old)
                nmd = meta(new)
                if not nmd.get("deletionTimestamp"):
                    nmd["deletionTimestamp"] = objects.now_rfc3339()
                    nmd["deletionGracePeriodSeconds"] = 0
                    if nmd.get("generation"):
                        nmd["generation"] += 1
                if fins:
                    nmd["finalizers"] = fins
                if rt.plural == "namespaces" and not rt.group:
                    new.setdefault("status", {})["phase"] = "Terminating"
                if opts.dry_run:
                    return new, 200
                ok, rev, _ = self.etcd.cas_put(key, objects.encode(new), kv.mod_rev)
                if ok:
                    nmd["resourceVersion"] = str(rev)
                    self._notify(rt, "terminating", new)
                    return new, 200
                continue
            if opts.dry_run:
                return self._deleted_reply(rt, old), 200
            ok, rev, _ = self.etcd.cas_delete(key, kv.mod_rev)
            if ok:
                md["resourceVersion"] = str(rev)
                self._notify(rt, "delete", old)
                return self._deleted_reply(rt, old), 200
        raise errors.conflict(rt, name)

    def _deleted_reply(self, rt, obj):
        if rt.return_deleted:
            return obj
        md = meta(obj)
        details = {"name": md.get("name"), "group": rt.group, "kind": rt.plural,
                   "uid": md.get("uid")}
        return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
                "details": details}

    def _notify(self, rt, event, obj):
        for cb in self.after_write:
            try:
                cb(rt, event, obj)
            except Exception as e:  # a hook must never fail the client's write
                self._log("after-write hook failed: %r" % e)


def _ns_finalizers(rt, obj):
    """Namespaces also wait for spec.finalizers (the namespace controller's)."""
    if rt.plural == "namespaces" and not rt.group:
        return list(((obj.get("spec") or {}).get("finalizers")) or [])
    return []


def _trackable(rt, obj, sub=None):
    """The part of an object a manager can own for managedFields bookkeeping."""
    o = {k: v for k, v in obj.items() if k not in ("apiVersion", "kind")}
    if rt.has_status:
        if sub == "status":
            o = {"status": o.get("status")} if "status" in o else {}
        else:
            o.pop("status", None)
    return o
