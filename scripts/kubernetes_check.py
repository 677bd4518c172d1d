#!/usr/bin/env python3
"""The Kubernetes manifests' checks (scripts/kubernetes-check.sh calls it with the built binaries): no
cluster runs here, so everything that can be checked without one is. Each overlay of
deploy/kubernetes renders (`kubectl kustomize`), every object validates against the Kubernetes API's
schemas of the newest minor versions `kubernetes-validate` ships (strict: no unknown field), and the
manifests are held to the code: every executable service has a Deployment; every variable a
Deployment sets (directly or from its ConfigMap) is one that service reads (its `--help` lists what it
reads); every `*_FILE` names a file under one of its mounts; its probes ask /ready and /health on the
port it serves them on (`HTTP_PORT`); it runs as its image's user for it (the Dockerfile's uids)
under the securityContext compose's containers run under; the dispatcher alone holds the signing
keys and reaches the internet.

  kubernetes_check.py BIN [--versions 1.35.0,1.36.0,1.37.0]
"""

import argparse
import os
import re
import subprocess
import sys

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
KUBERNETES = os.path.join(ROOT, "deploy", "kubernetes")
OVERLAYS = ["redis", "managed-redis", "redis-cluster"]
SERVICES = ["ingest", "admin", "verifier", "attribution-winner", "scheduler", "dispatcher"]
# The port each serves /health and /ready on (HTTP_PORT's defaults in docs/reference/configuration.md).
DEFAULT_PORTS = {"ingest": 8080, "admin": 8081}


def render(overlay):
    """The overlay's objects, as `kubectl kustomize` renders them."""
    result = subprocess.run(
        ["kubectl", "kustomize", os.path.join(KUBERNETES, "overlays", overlay)], capture_output=True, text=True
    )
    if result.returncode != 0:
        raise SystemExit(f"FAILED: kubectl kustomize {overlay}: {result.stderr.strip()}")
    return [document for document in yaml.safe_load_all(result.stdout) if document]


def validate(overlay, objects, versions):
    """Problems of the objects against each version's schemas (strict), as kubernetes-validate words them."""
    import kubernetes_validate

    problems = []
    for version in versions:
        for item in objects:
            try:
                kubernetes_validate.validate(item, version, strict=True)
            except kubernetes_validate.ValidationError as error:
                name = f"{item['kind']}/{item['metadata']['name']}"
                problems.append(f"{overlay}: {name} against {version}: {error.message} at {list(error.path)}")
    return problems


def reads(bin_dir, service):
    """The environment variables `service` reads: the keys its --help lists under Configuration."""
    text = subprocess.run([os.path.join(bin_dir, service), "--help"], capture_output=True, text=True).stdout
    configuration = text.split("Configuration, from the environment", 1)[-1]
    return set(re.findall(r"^  ([A-Z][A-Z0-9_]+) \(", configuration, re.MULTILINE))


def image_users(dockerfile):
    """The image's user of each service, name to uid: the Dockerfile makes them from 10000 in its order."""
    with open(dockerfile) as file:
        text = file.read()
    names = re.search(r"for user in ([a-z -]+); do", text).group(1).split()
    return {name: 10000 + index for index, name in enumerate(names)}


def check_service(name, deployment, config_maps, known, uids):
    """What is wrong with one service's Deployment."""
    problems = []
    pod = deployment["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    if container.get("args") != [name]:
        problems.append(f"{name}: runs {container.get('args')}, not its executable")
    environment = {item["name"]: item.get("value") for item in container.get("env", [])}
    for source in container.get("envFrom", []):
        environment.update(config_maps[source["configMapRef"]["name"]])
    for key in sorted(set(environment) - known):
        problems.append(f"{name}: sets {key}, which {name} does not read")
    mounts = [mount["mountPath"] for mount in container.get("volumeMounts", [])]
    for key, value in environment.items():
        if key.endswith("_FILE") and not any(value.startswith(path + "/") for path in mounts):
            problems.append(f"{name}: {key}={value} is under none of its mounts {mounts}")
    port = int(environment.get("HTTP_PORT") or DEFAULT_PORTS.get(name, 9090))
    ports = {item["name"]: item["containerPort"] for item in container.get("ports", [])}
    for probe, path in (("readinessProbe", "/ready"), ("livenessProbe", "/health")):
        get = container.get(probe, {}).get("httpGet", {})
        if get.get("path") != path or ports.get(get.get("port"), get.get("port")) != port:
            problems.append(f"{name}: {probe} asks {get}, not {path} on its HTTP_PORT {port}")
    security = pod.get("securityContext", {})
    wanted_pod = {"runAsNonRoot": True, "runAsUser": uids[name], "seccompProfile": {"type": "RuntimeDefault"}}
    for key, value in wanted_pod.items():
        if security.get(key) != value:
            problems.append(f"{name}: pod securityContext {key} is {security.get(key)}, not {value}")
    wanted_container = {
        "allowPrivilegeEscalation": False,
        "readOnlyRootFilesystem": True,
        "capabilities": {"drop": ["ALL"]},
    }
    for key, value in wanted_container.items():
        if container.get("securityContext", {}).get(key) != value:
            problems.append(f"{name}: container securityContext {key} is not {value}")
    secrets = {volume["secret"]["secretName"] for volume in pod.get("volumes", []) if "secret" in volume}
    if ("signing-keys" in secrets) != (name == "dispatcher"):
        problems.append(f"{name}: the signing keys are the dispatcher's alone (mounts {sorted(secrets)})")
    return problems


def check_objects(overlay, objects, bin_dir, uids):
    """The overlay held to the code."""
    problems = []
    by_kind = {}
    for item in objects:
        by_kind.setdefault(item["kind"], {})[item["metadata"]["name"]] = item
    deployments = by_kind.get("Deployment", {})
    config_maps = {name: item.get("data", {}) for name, item in by_kind.get("ConfigMap", {}).items()}
    for name in SERVICES:
        if name not in deployments:
            problems.append(f"{overlay}: no Deployment of {name}")
            continue
        problems += [
            f"{overlay}: {line}"
            for line in check_service(name, deployments[name], config_maps, reads(bin_dir, name), uids)
        ]
    for name in sorted(set(deployments) - set(SERVICES)):
        problems.append(f"{overlay}: a Deployment of {name}, which is not a service")
    for name, policy in by_kind.get("NetworkPolicy", {}).items():
        internet = any(
            block.get("ipBlock", {}).get("cidr") == "0.0.0.0/0"
            for rule in policy["spec"].get("egress", [])
            for block in rule.get("to", [])
        )
        selected = policy["spec"]["podSelector"].get("matchLabels", {}).get("app.kubernetes.io/name")
        if internet and selected != "dispatcher":
            problems.append(f"{overlay}: NetworkPolicy {name} lets {selected or 'every pod'} reach the internet")
    for name in SERVICES:
        if name != "ingest" and by_kind.get("Service", {}).get(name, {}).get("spec", {}).get("type") in (
            "LoadBalancer",
            "NodePort",
        ):
            problems.append(f"{overlay}: {name} is exposed outside the cluster")
    return problems


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("bin", help="the directory of the built executables")
    parser.add_argument("--versions", default="1.35.0,1.36.0,1.37.0", help="Kubernetes versions to validate against")
    args = parser.parse_args()
    versions = args.versions.split(",")
    uids = image_users(os.path.join(ROOT, "Dockerfile"))
    problems = []
    for overlay in OVERLAYS:
        objects = render(overlay)
        kinds = sorted({item["kind"] for item in objects})
        print(f"    {overlay}: {len(objects)} objects ({', '.join(kinds)})", flush=True)
        problems += validate(overlay, objects, versions)
        problems += check_objects(overlay, objects, args.bin, uids)
    for problem in problems:
        print(f"FAILED: {problem}", file=sys.stderr)
    if problems:
        return 1
    print(
        f"    every overlay renders, validates against Kubernetes {', '.join(versions)} (strict) and matches the code"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
