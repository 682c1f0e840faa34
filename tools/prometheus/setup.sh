#!/usr/bin/env bash
# A real Prometheus server for the `prometheus` test tier, installed the way a user on Debian
# would: Debian's own package (`apt-get install prometheus`, 2.42 on bookworm). Prints the
# binary's path last. Idempotent: an installed binary is kept. Needs root (CI runs as root).
# The package's service is not used: each test starts its own server with a temp config and
# data directory (tests/test_prometheus_real.py).
set -euo pipefail
if ! command -v prometheus >/dev/null 2>&1; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >&2
  apt-get install -y -qq --no-install-recommends prometheus >&2
fi
prometheus --version 2>&1 | head -1 >&2
command -v prometheus
