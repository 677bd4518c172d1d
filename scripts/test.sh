#!/usr/bin/env bash
# The whole test suite: installs what is missing, builds every executable (the end-to-end tests run
# them as real processes), and runs `swift test`. Tests start their own redis-server on free ports.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh

ensure_system_packages
echo "==> swift format lint (the committed .swift-format)"
swift format lint --strict --recursive Package.swift Shared Services Tools Tests
echo "==> swift build"
swift build
echo "==> swift test"
PIPELINE_BIN_DIR="$(swift build --show-bin-path)" swift test "$@"
