#!/usr/bin/env bash
# Headless Chromium for the `chromium` test tier (tests/test_html_report.py renders the HTML
# report in it), from Debian's own package. Prints the binary's path last. Idempotent. Needs root.
set -euo pipefail
if ! command -v chromium >/dev/null 2>&1; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >&2
  apt-get install -y -qq --no-install-recommends chromium >&2
fi
chromium --version >&2
command -v chromium
