#!/usr/bin/env python3
"""Renders every kustomization under deploy/kubernetes with `kubectl kustomize` and validates
each object without a cluster: apiVersion/kind known, required fields present and well formed,
references that resolve inside the rendering (selectors, ports, probes, volumes, RBAC), and the
gateway's contract (3 replicas, anti-affinity, /readyz and /healthz probes, resources, minimal
RBAC) and the sample model's (one Deployment per GPU type, the shared model label, drain-wait).

    validate_manifests.py DEPLOY_DIR [--kubectl PATH]

Exit 0 when everything is valid, 1 with one line per problem, 77 (skipped) without kubectl.
"""
import argparse
import os
import re
import shutil
import subprocess
import sys

try:
    import yaml
except ImportError:  # python3-yaml (scripts/install-deps.sh)
    print("validate_manifests: python3-yaml is missing; skipped")
    sys.exit(77)

DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$")
DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")
LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]{0,61})?[A-Za-z0-9])?$")
LABEL_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]{0,61})?[A-Za-z0-9]$")
PORT_NAME = re.compile(r"^[a-z0-9]([-a-z0-9]{0,13}[a-z0-9])?$")

# apiVersion, kind -> (namespaced, required field paths)
KINDS = {
    ("v1", "Namespace"): (False, []),
    ("v1", "ServiceAccount"): (True, []),
    ("v1", "ConfigMap"): (True, ["data"]),
    ("v1", "Service"): (True, ["spec.ports", "spec.selector"]),
    ("apps/v1", "Deployment"): (True, ["spec.selector.matchLabels", "spec.template.metadata.labels",
                                       "spec.template.spec.containers"]),
    ("rbac.authorization.k8s.io/v1", "Role"): (True, ["rules"]),
    ("rbac.authorization.k8s.io/v1", "RoleBinding"): (True, ["roleRef.apiGroup", "roleRef.kind",
                                                             "roleRef.name", "subjects"]),
    ("rbac.authorization.k8s.io/v1", "ClusterRole"): (False, ["rules"]),
    ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"): (False, ["roleRef.name", "subjects"]),
    ("policy/v1", "PodDisruptionBudget"): (True, ["spec.selector"]),
    ("networking.k8s.io/v1", "NetworkPolicy"): (True, ["spec.podSelector", "spec.policyTypes"]),
    ("monitoring.coreos.com/v1", "ServiceMonitor"): (True, ["spec.selector", "spec.endpoints"]),
    ("monitoring.coreos.com/v1", "PodMonitor"): (True, ["spec.selector", "spec.podMetricsEndpoints"]),
}
VERBS = {"get", "list", "watch", "create", "update", "patch", "delete", "deletecollection"}
QUANTITY = re.compile(r"^([0-9]+(\.[0-9]+)?)(m|Ki|Mi|Gi|Ti|k|M|G|T)?$")
SCALE = {None: 1, "m": 1e-3, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12,
         "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40}


def field(obj, path):
    for part in path.split("."):
        if not isinstance(obj, dict) or part not in obj:
            return None
        obj = obj[part]
    return obj


def quantity(text):
    m = QUANTITY.match(str(text))
    return None if not m else float(m.group(1)) * SCALE[m.group(3)]


def selects(selector, labels):
    """A label selector (matchLabels / matchExpressions, or a plain map) against labels."""
    if selector is None:
        return False
    match_labels = selector.get("matchLabels", selector if "matchExpressions" not in selector
                                else {})
    if "matchLabels" not in selector and "matchExpressions" in selector:
        match_labels = {}
    for k, v in (match_labels or {}).items():
        if labels.get(k) != v:
            return False
    for expr in selector.get("matchExpressions", []) or []:
        key, op, values = expr.get("key"), expr.get("operator"), expr.get("values", [])
        if op == "Exists" and key not in labels:
            return False
        if op == "DoesNotExist" and key in labels:
            return False
        if op == "In" and labels.get(key) not in values:
            return False
        if op == "NotIn" and labels.get(key) in values:
            return False
    return True


def mounted(container, path):
    """Whether `path` lies under one of the container's volumeMounts."""
    for mount in container.get("volumeMounts", []) or []:
        root = str(mount.get("mountPath", "")).rstrip("/")
        if root and (path == root or path.startswith(root + "/")):
            return True
    return False


class Checker:
    def __init__(self, where):
        self.where = where
        self.problems = []

    def fail(self, obj, message):
        name = f"{obj.get('kind', '?')}/{field(obj, 'metadata.name') or '?'}" if obj else ""
        self.problems.append(f"{self.where}: {name}: {message}")

    def labels(self, obj, labels, what):
        for k, v in (labels or {}).items():
            prefix, _, name = k.rpartition("/")
            if (prefix and not DNS1123_SUBDOMAIN.match(prefix)) or not LABEL_NAME.match(name):
                self.fail(obj, f"{what}: bad label key {k!r}")
            if not isinstance(v, str) or not LABEL_VALUE.match(v):
                self.fail(obj, f"{what}: bad label value {k}={v!r} (labels are strings)")

    def pod_spec(self, obj, spec):
        volumes = {v.get("name") for v in spec.get("volumes", []) or []}
        for group in ("initContainers", "containers"):
            names = set()
            for c in spec.get(group, []) or []:
                cname = c.get("name")
                if not cname or not DNS1123_LABEL.match(cname):
                    self.fail(obj, f"{group}: bad or missing name {cname!r}")
                if cname in names:
                    self.fail(obj, f"{group}: duplicate container {cname}")
                names.add(cname)
                if not c.get("image"):
                    self.fail(obj, f"container {cname}: no image")
                ports = {}
                for p in c.get("ports", []) or []:
                    number = p.get("containerPort")
                    if not isinstance(number, int) or not 1 <= number <= 65535:
                        self.fail(obj, f"container {cname}: bad containerPort {number!r}")
                    if "name" in p:
                        if not PORT_NAME.match(p["name"]):
                            self.fail(obj, f"container {cname}: bad port name {p['name']!r}")
                        ports[p["name"]] = number
                for probe_name in ("readinessProbe", "livenessProbe", "startupProbe"):
                    probe = c.get(probe_name)
                    if not probe:
                        continue
                    handlers = [h for h in ("httpGet", "tcpSocket", "exec", "grpc") if h in probe]
                    if len(handlers) != 1:
                        self.fail(obj, f"container {cname}: {probe_name} needs one handler")
                        continue
                    port = (probe.get("httpGet") or probe.get("tcpSocket") or {}).get("port")
                    if isinstance(port, str) and port not in ports:
                        self.fail(obj, f"container {cname}: {probe_name} names port {port!r}, "
                                       f"which the container does not declare")
                    if "httpGet" in probe and not str(probe["httpGet"].get("path", "")).startswith("/"):
                        self.fail(obj, f"container {cname}: {probe_name} path must start with /")
                res = c.get("resources") or {}
                for key, request in (res.get("requests") or {}).items():
                    limit = (res.get("limits") or {}).get(key)
                    if quantity(request) is None:
                        self.fail(obj, f"container {cname}: bad request {key}={request!r}")
                    elif limit is not None and (quantity(limit) is None or
                                                quantity(limit) < quantity(request)):
                        self.fail(obj, f"container {cname}: {key} limit below its request")
                for mount in c.get("volumeMounts", []) or []:
                    if mount.get("name") not in volumes:
                        self.fail(obj, f"container {cname}: mounts unknown volume "
                                       f"{mount.get('name')!r}")
                    if not str(mount.get("mountPath", "")).startswith("/"):
                        self.fail(obj, f"container {cname}: mountPath must be absolute")
                hook = field(c, "lifecycle.preStop")
                if hook is not None and not any(h in hook for h in ("exec", "httpGet", "sleep")):
                    self.fail(obj, f"container {cname}: preStop needs a handler")

    def object(self, obj):
        api, kind = obj.get("apiVersion"), obj.get("kind")
        if (api, kind) not in KINDS:
            self.fail(obj, f"unknown apiVersion/kind {api}/{kind}")
            return
        namespaced, required = KINDS[(api, kind)]
        name = field(obj, "metadata.name")
        if not name or not DNS1123_SUBDOMAIN.match(name):
            self.fail(obj, f"bad or missing metadata.name {name!r}")
        if namespaced and not field(obj, "metadata.namespace"):
            self.fail(obj, "namespaced object without metadata.namespace")
        if not namespaced and field(obj, "metadata.namespace"):
            self.fail(obj, "cluster-scoped object with a namespace")
        self.labels(obj, field(obj, "metadata.labels"), "metadata.labels")
        for path in required:
            if field(obj, path) in (None, [], {}):
                self.fail(obj, f"missing {path}")
        if kind == "Deployment":
            replicas = field(obj, "spec.replicas")
            if replicas is not None and (not isinstance(replicas, int) or replicas < 0):
                self.fail(obj, f"bad spec.replicas {replicas!r}")
            template_labels = field(obj, "spec.template.metadata.labels") or {}
            self.labels(obj, template_labels, "template labels")
            if not selects(field(obj, "spec.selector"), template_labels):
                self.fail(obj, "spec.selector does not select the Pod template's labels")
            self.pod_spec(obj, field(obj, "spec.template.spec") or {})
        if kind == "Service":
            for p in field(obj, "spec.ports") or []:
                if not isinstance(p.get("port"), int) or not 1 <= p["port"] <= 65535:
                    self.fail(obj, f"bad service port {p.get('port')!r}")
        if kind in ("Role", "ClusterRole"):
            for rule in obj.get("rules", []):
                verbs = set(rule.get("verbs", []))
                if "*" in verbs or "*" in rule.get("resources", []):
                    self.fail(obj, "wildcards in RBAC rules")
                if not verbs <= VERBS:
                    self.fail(obj, f"unknown verbs {sorted(verbs - VERBS)}")
        if kind == "ConfigMap":
            for key, text in (obj.get("data") or {}).items():
                if not isinstance(text, str):
                    self.fail(obj, f"data.{key} is not a string")
                elif key.endswith((".yaml", ".yml")):
                    try:
                        yaml.safe_load(text)
                    except yaml.YAMLError as e:
                        self.fail(obj, f"data.{key} is not YAML: {e}")

    def references(self, objects):
        """Cross-object checks within one rendering."""
        by_kind = {}
        for o in objects:
            by_kind.setdefault(o.get("kind"), []).append(o)
        templates = [(d, field(d, "spec.template.metadata.labels") or {},
                      field(d, "spec.template.spec") or {}) for d in by_kind.get("Deployment", [])]

        def container_ports(spec):
            out = {}
            for c in spec.get("containers", []) or []:
                for p in c.get("ports", []) or []:
                    if "name" in p:
                        out[p["name"]] = p["containerPort"]
            return out

        for svc in by_kind.get("Service", []):
            selected = [t for t in templates if selects(field(svc, "spec.selector") or {}, t[1])]
            if templates and not selected:
                self.fail(svc, "selects no Pod template of this rendering")
            for p in field(svc, "spec.ports") or []:
                target = p.get("targetPort")
                for dep, _, spec in selected:
                    if isinstance(target, str) and target not in container_ports(spec):
                        self.fail(svc, f"targetPort {target!r} is not a port of "
                                       f"{field(dep, 'metadata.name')}")
        for pdb in by_kind.get("PodDisruptionBudget", []):
            if templates and not any(selects(field(pdb, "spec.selector"), t[1]) for t in templates):
                self.fail(pdb, "selects no Pod template of this rendering")
        for policy in by_kind.get("NetworkPolicy", []):
            selected = [t for t in templates if selects(field(policy, "spec.podSelector"), t[1])]
            if templates and not selected:
                self.fail(policy, "selects no Pod template of this rendering")
            for rule in field(policy, "spec.ingress") or []:
                for p in rule.get("ports", []) or []:
                    port = p.get("port")
                    for dep, _, spec in selected:
                        if isinstance(port, str) and port not in container_ports(spec):
                            self.fail(policy, f"port {port!r} is not a port of "
                                              f"{field(dep, 'metadata.name')}")
        names = {(o.get("kind"), field(o, "metadata.name")) for o in objects}
        for rb in by_kind.get("RoleBinding", []) + by_kind.get("ClusterRoleBinding", []):
            ref = rb.get("roleRef", {})
            if (ref.get("kind"), ref.get("name")) not in names:
                self.fail(rb, f"roleRef {ref.get('kind')}/{ref.get('name')} is not rendered")
            for s in rb.get("subjects", []):
                if s.get("kind") == "ServiceAccount" and ("ServiceAccount", s.get("name")) not in names:
                    self.fail(rb, f"subject ServiceAccount/{s.get('name')} is not rendered")
        for dep, _, spec in templates:
            sa = spec.get("serviceAccountName")
            if sa and by_kind.get("ServiceAccount") and ("ServiceAccount", sa) not in names:
                self.fail(dep, f"serviceAccountName {sa} is not rendered")
            for vol in spec.get("volumes", []) or []:
                cm = field(vol, "configMap.name")
                if cm and by_kind.get("ConfigMap") is not None and ("ConfigMap", cm) not in names:
                    self.fail(dep, f"volume {vol.get('name')}: ConfigMap {cm} is not rendered")
        for sm in by_kind.get("ServiceMonitor", []):
            services = [s for s in by_kind.get("Service", [])
                        if selects(field(sm, "spec.selector"), field(s, "metadata.labels") or {})]
            if by_kind.get("Service") and not services:
                self.fail(sm, "selects no Service of this rendering")
            for ep in field(sm, "spec.endpoints") or []:
                if services and not any(ep.get("port") in [p.get("name") for p in
                                                           field(s, "spec.ports") or []]
                                        for s in services):
                    self.fail(sm, f"endpoint port {ep.get('port')!r} is not a Service port")

    def gateway(self, objects):
        """The gateway's contract (the base and every overlay that includes it)."""
        deps = [o for o in objects if o.get("kind") == "Deployment" and
                field(o, "metadata.name") == "switchyard-gateway"]
        if not deps:
            return
        dep = deps[0]
        if field(dep, "spec.replicas") != 3:
            self.fail(dep, "the gateway runs 3 replicas")
        if not field(dep, "spec.template.spec.affinity.podAntiAffinity"):
            self.fail(dep, "the gateway needs pod anti-affinity")
        container = (field(dep, "spec.template.spec.containers") or [{}])[0]
        if field(container, "readinessProbe.httpGet.path") != "/readyz":
            self.fail(dep, "readiness must probe /readyz")
        if field(container, "livenessProbe.httpGet.path") != "/healthz":
            self.fail(dep, "liveness must probe /healthz")
        if not field(container, "resources.requests") or not field(container, "resources.limits"):
            self.fail(dep, "the gateway needs resource requests and limits")
        # The admin listener binds beyond loopback without authentication of its own: a
        # NetworkPolicy must keep it to chosen peers (every rule naming the admin port has a from).
        labels = field(dep, "spec.template.metadata.labels") or {}
        policies = [o for o in objects if o.get("kind") == "NetworkPolicy" and
                    selects(field(o, "spec.podSelector"), labels)]
        if not policies:
            self.fail(dep, "no NetworkPolicy protects the gateway's admin port")
        for policy in policies:
            for rule in field(policy, "spec.ingress") or []:
                ports = [p.get("port") for p in rule.get("ports", []) or []]
                if (not ports or "admin" in ports) and not rule.get("from"):
                    self.fail(policy, "lets anyone reach the admin port")
        rules = {}
        for role in [o for o in objects if o.get("kind") in ("Role", "ClusterRole") and
                     field(o, "metadata.name") == "switchyard-gateway"]:
            for rule in role.get("rules", []):
                for res in rule.get("resources", []):
                    rules.setdefault(res, set()).update(rule.get("verbs", []))
        wanted = {"pods": {"get", "list", "watch", "patch"},
                  "deployments": {"get", "list", "watch"}}
        for res, verbs in rules.items():
            if res not in wanted and not (res == "nodes" and verbs == {"get"}):
                self.fail(dep, f"RBAC grants {res}, which discovery does not need")
            elif res in wanted and not verbs <= wanted[res]:
                self.fail(dep, f"RBAC grants {sorted(verbs - wanted[res])} on {res}: too much")
        for res, verbs in wanted.items():
            if not verbs <= rules.get(res, set()):
                self.fail(dep, f"RBAC misses {sorted(verbs - rules.get(res, set()))} on {res}")
        config = [o for o in objects if o.get("kind") == "ConfigMap" and
                  field(o, "metadata.name") == "switchyard-gateway"]
        if config:
            parsed = yaml.safe_load(field(config[0], "data")["gateway.yaml"])
            if field(parsed, "discovery.kubernetes") is None and "kubernetes" not in (
                    parsed.get("discovery") or {}):
                self.fail(config[0], "the gateway config has no discovery.kubernetes")
            # Beyond loopback the gateway refuses to start without admin credentials, and the
            # keys file must be where the container mounts it.
            admin = str(parsed.get("admin_listen", "127.0.0.1:8889"))
            if not admin.startswith(("127.", "localhost", "[::1]")):
                keys = field(parsed, "admin_auth.keys_file")
                if not keys and not field(parsed, "admin_tls.client_ca_file"):
                    self.fail(config[0], f"admin_listen {admin} without admin_auth.keys_file or "
                                         "admin_tls.client_ca_file: the gateway would not start")
                elif keys and not mounted(container, keys):
                    self.fail(dep, f"admin_auth.keys_file {keys} is not under a volumeMount")

    def model(self, objects):
        """A sample model: Deployments sharing model.aibrix.ai/name, drained by drain-wait."""
        engines = [o for o in objects if o.get("kind") == "Deployment" and
                   "model.aibrix.ai/name" in (field(o, "spec.template.metadata.labels") or {})]
        if not engines:
            return
        models = {field(o, "spec.template.metadata.labels")["model.aibrix.ai/name"] for o in engines}
        for model in models:
            group = [o for o in engines
                     if field(o, "spec.template.metadata.labels")["model.aibrix.ai/name"] == model]
            gpus = {(field(o, "spec.template.metadata.labels") or {}).get("gpu") for o in group}
            if len(group) < 2 or len(gpus) != len(group):
                self.fail(group[0], f"model {model}: one Deployment per GPU type expected")
        for dep in engines:
            if field(dep, "metadata.labels", ) is None or \
                    "model.aibrix.ai/name" not in field(dep, "metadata.labels"):
                self.fail(dep, "the Deployment itself carries model.aibrix.ai/name")
            containers = field(dep, "spec.template.spec.containers") or []
            if not any("http" in [p.get("name") for p in c.get("ports", []) or []]
                       for c in containers):
                self.fail(dep, "the engine declares no port named http")
            hooks = " ".join(" ".join(field(c, "lifecycle.preStop.exec.command") or [])
                             for c in containers)
            if "drain-wait" not in hooks or "--pod" not in hooks or "--gateway" not in hooks:
                self.fail(dep, "the engine's preStop hook must run switchyard drain-wait")
            # The gateways' admin port requires a token (base/configmap.yaml's admin_auth).
            token = re.search(r"--token-file[ =](\S+)", hooks)
            if "drain-wait" in hooks and not token:
                self.fail(dep, "drain-wait needs --token-file: the admin port requires a token")
            elif token and not any(mounted(c, token.group(1)) for c in containers):
                self.fail(dep, f"drain-wait's token {token.group(1)} is not under a volumeMount")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("root")
    parser.add_argument("--kubectl", default=os.environ.get("KUBECTL", "kubectl"))
    args = parser.parse_args()
    kubectl = shutil.which(args.kubectl)
    if kubectl is None:
        print("validate_manifests: kubectl not found; skipped (scripts/install-deps.sh)")
        return 77
    dirs = sorted(d for d, _, files in os.walk(args.root) if "kustomization.yaml" in files)
    if not dirs:
        print(f"validate_manifests: no kustomization under {args.root}")
        return 1
    problems = []
    total = 0
    for d in dirs:
        where = os.path.relpath(d, args.root)
        rendered = subprocess.run([kubectl, "kustomize", d], capture_output=True, text=True,
                                  timeout=60)
        if rendered.returncode != 0:
            problems.append(f"{where}: kubectl kustomize failed: {rendered.stderr.strip()}")
            continue
        objects = [o for o in yaml.safe_load_all(rendered.stdout) if o is not None]
        checker = Checker(where)
        for obj in objects:
            checker.object(obj)
        checker.references(objects)
        checker.gateway(objects)
        checker.model(objects)
        problems += checker.problems
        total += len(objects)
        print(f"{where}: {len(objects)} objects")
    for p in problems:
        print(p)
    print(f"validate_manifests: {len(dirs)} kustomizations, {total} objects, "
          f"{len(problems)} problems ({kubectl})")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
