"""Discovery and OpenAPI documents (https://kubernetes.io/docs/concepts/overview/kubernetes-api/).

Legacy discovery (/api, /apis, /api/v1, /apis/<g>/<v>), aggregated discovery v2
(only when the Accept header lists v=v2: kubectl 1.29 asks for v2beta1 only and
must then get the legacy form), and a minimal /openapi/v3 that declares the
fieldValidation parameter on each PATCH operation so that kubectl's default
`--validate=strict` works and defers validation to the server.
"""

import hashlib
import json

from .resources import ALL_VERBS, SUB_VERBS

VERSION = {"major": "1", "minor": "32", "gitVersion": "v1.32.0", "gitCommit":
           "70d3cc986aa8221cd1dfb1121852688902d3bf53", "gitTreeState": "clean",
           "buildDate": "2024-12-11T17:59:15Z", "goVersion": "go1.23.3", "compiler": "gc",
           "platform": "linux/amd64"}

AGGREGATED_CT = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"


def wants_aggregated(accept):
    """True if Accept lists the v2 APIGroupDiscoveryList (not just v2beta1)."""
    for part in (accept or "").split(","):
        params = {}
        for p in part.split(";")[1:]:
            k, _, v = p.strip().partition("=")
            params[k.strip()] = v.strip()
        if params.get("g") == "apidiscovery.k8s.io" and params.get("v") == "v2" and \
                params.get("as") == "APIGroupDiscoveryList":
            return True
    return False


def _resource_entries(rt):
    main = {"name": rt.plural, "singularName": rt.singular, "namespaced": rt.namespaced,
            "kind": rt.kind, "verbs": ALL_VERBS}
    if rt.short_names:
        main["shortNames"] = rt.short_names
    if rt.categories:
        main["categories"] = rt.categories
    out = [main]
    for sub in sorted(rt.subresources):
        e = {"name": "%s/%s" % (rt.plural, sub), "singularName": "", "namespaced": rt.namespaced,
             "kind": rt.kind, "verbs": SUB_VERBS[sub]}
        if sub == "scale":
            e.update(group="autoscaling", version="v1", kind="Scale")
        elif sub == "eviction":
            e.update(group="policy", version="v1", kind="Eviction")
        elif sub == "binding":
            e.update(kind="Binding")
        elif sub == "token":
            e.update(group="authentication.k8s.io", version="v1", kind="TokenRequest")
        out.append(e)
    return out


def resource_list(registry, group, version):
    types = registry.types_in(group, version)
    if not types:
        return None
    gv = version if not group else "%s/%s" % (group, version)
    resources = []
    for rt in types:
        resources += _resource_entries(rt)
    return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv,
            "resources": resources}


def api_versions(server_address):
    return {"kind": "APIVersions", "versions": ["v1"],
            "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0",
                                            "serverAddress": server_address}]}


def _group_doc(group, versions):
    vs = [{"groupVersion": "%s/%s" % (group, v), "version": v} for v in versions]
    return {"name": group, "versions": vs, "preferredVersion": vs[0]}


def api_group_list(registry):
    groups = [_group_doc(g, vs) for g, vs in registry.groups() if g]
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}


def api_group(registry, group):
    for g, vs in registry.groups():
        if g == group and g:
            d = _group_doc(g, vs)
            d.update(kind="APIGroup", apiVersion="v1")
            return d
    return None


def _aggregated_resource(rt):
    r = {"resource": rt.plural,
         "responseKind": {"group": rt.group, "version": rt.version, "kind": rt.kind},
         "scope": "Namespaced" if rt.namespaced else "Cluster",
         "singularResource": rt.singular, "verbs": ALL_VERBS}
    if rt.short_names:
        r["shortNames"] = rt.short_names
    if rt.categories:
        r["categories"] = rt.categories
    subs = []
    for sub in sorted(rt.subresources):
        kind = {"group": rt.group, "version": rt.version, "kind": rt.kind}
        if sub == "scale":
            kind = {"group": "autoscaling", "version": "v1", "kind": "Scale"}
        elif sub == "eviction":
            kind = {"group": "policy", "version": "v1", "kind": "Eviction"}
        elif sub == "binding":
            kind = {"group": "", "version": "v1", "kind": "Binding"}
        elif sub == "token":
            kind = {"group": "authentication.k8s.io", "version": "v1", "kind": "TokenRequest"}
        subs.append({"subresource": sub, "responseKind": kind, "verbs": SUB_VERBS[sub]})
    if subs:
        r["subresources"] = subs
    return r


def aggregated(registry, core):
    items = []
    for g, vs in registry.groups():
        if (g == "") != core:
            continue
        versions = [{"version": v, "freshness": "Current",
                     "resources": [_aggregated_resource(rt) for rt in registry.types_in(g, v)]}
                    for v in vs]
        items.append({"metadata": {"name": g}, "versions": versions})
    return {"kind": "APIGroupDiscoveryList", "apiVersion": "apidiscovery.k8s.io/v2",
            "metadata": {}, "items": items}


# -- OpenAPI v3 -------------------------------------------------------------------
def _gv_path(group, version):
    return "api/v1" if not group else "apis/%s/%s" % (group, version)


def openapi_gv(registry, group, version):
    types = registry.types_in(group, version)
    if not types:
        return None
    paths = {}
    base = "/api/v1" if not group else "/apis/%s/%s" % (group, version)
    param = [{"name": "fieldValidation", "in": "query", "schema": {"type": "string",
                                                                   "uniqueItems": True}}]
    for rt in types:
        gvk = {"group": rt.group, "version": rt.version, "kind": rt.kind}
        if rt.namespaced:
            coll = "%s/namespaces/{namespace}/%s" % (base, rt.plural)
        else:
            coll = "%s/%s" % (base, rt.plural)
        op = {"x-kubernetes-group-version-kind": gvk, "parameters": param}
        paths[coll] = {"post": dict(op)}
        paths[coll + "/{name}"] = {"put": dict(op), "patch": dict(op)}
        if rt.has_status:
            paths[coll + "/{name}/status"] = {"put": dict(op), "patch": dict(op)}
    return {"openapi": "3.0.0", "info": {"title": "Kubernetes", "version": "v1.32.0"},
            "components": {"schemas": {}}, "paths": paths}


def _hash(doc):
    return hashlib.sha512(json.dumps(doc, sort_keys=True).encode()).hexdigest()[:64].upper()


def openapi_index(registry):
    paths = {}
    for g, vs in registry.groups():
        for v in vs:
            doc = openapi_gv(registry, g, v)
            if doc is None:
                continue
            p = _gv_path(g, v)
            paths[p] = {"serverRelativeURL": "/openapi/v3/%s?hash=%s" % (p, _hash(doc))}
    return {"paths": paths}
