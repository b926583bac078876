#!/usr/bin/env bash
# Runs interop_js.mjs against jetraft-server: installs nats.js (@nats-io/transport-node and
# @nats-io/jetstream, pinned) from npm into WORKDIR the first time, copies the test beside its
# node_modules and runs it. Exit 77 (skipped) when the packages cannot be installed.
# Usage: run_interop_js.sh PATH/TO/jetraft-server WORKDIR
set -euo pipefail
bin=$1
work=$2
here="$(cd "$(dirname "$0")" && pwd)"
mkdir -p "$work"
if [ ! -d "$work/node_modules/@nats-io/jetstream" ]; then
    if ! (cd "$work" && npm install --silent --no-audit --no-fund \
        @nats-io/transport-node@3.4.0 @nats-io/jetstream@3.4.0 >npm.log 2>&1); then
        echo "run_interop_js: npm install failed (see $work/npm.log): skipped"
        exit 77
    fi
fi
cp "$here/interop_js.mjs" "$work/interop_js.mjs"
exec node "$work/interop_js.mjs" "$bin"
