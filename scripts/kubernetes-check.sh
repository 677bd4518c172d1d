#!/usr/bin/env bash
# The Kubernetes manifests' checks (deploy/kubernetes; no cluster runs here): every overlay renders with
# `kubectl kustomize`, validates against the Kubernetes API's schemas (strict) and matches the code
# (scripts/kubernetes_check.py says what). Installs what is missing: kubectl (Debian's kubernetes-client
# where no kubectl is on PATH; the manifests render the same with its kustomize and with today's) and
# `kubernetes-validate` at the version scripts/pyproject.toml pins.
#
#   scripts/kubernetes-check.sh [BIN]     (BIN: the built executables; default: swift build's)
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh

if ! command -v kubectl >/dev/null 2>&1; then
    echo "==> installing kubectl (Debian's kubernetes-client)"
    sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq kubernetes-client >/dev/null
fi
pin=$(python3 scripts/pins.py kubernetes-validate)
if [ "$(python3 -c 'import importlib.metadata as m; print(m.version("kubernetes-validate"))' 2>/dev/null)" != "${pin#kubernetes-validate==}" ]; then
    echo "==> installing Python's $pin"
    python3 -m pip install --quiet --disable-pip-version-check "$pin"
fi
BIN=${1:-$(swift build --show-bin-path)}
echo "==> the Kubernetes manifests with $(kubectl version --client 2>/dev/null | head -1)"
exec python3 scripts/kubernetes_check.py "$BIN"
