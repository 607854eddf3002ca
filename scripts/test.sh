#!/usr/bin/env bash
# The test command (`npm test`): synthesize, vitest over every suite, then the closing line CI reads.
set -uo pipefail
cd "$(dirname "$0")/.."
results=.test-results.json
rm -f "$results"
# The tier (test/tier/) runs the synthesized stack from cdk.out: synthesize first (offline, about 30 s)
# so it never reads a stale one. Skipped only when every argument names tests outside the tier.
synth=1
if [ $# -gt 0 ]; then
  synth=0
  for arg in "$@"; do case "$arg" in *tier*|-*) synth=1 ;; esac; done
fi
if [ "$synth" = 1 ]; then
  log=$(mktemp)
  # With the tier's platform models (test/fixtures/platform-llms/tier.json), so the LLM gateway, its
  # function URL and CloudFront behaviour are synthesized and run (test/tier/llm-gateway.test.ts), and
  # the CORS origin Agent Canvas is served from in the tier (test/fixtures/cors/tier.json), as a
  # deployer names theirs (test/tier/stream.test.ts drives Canvas in Chromium on the deployment).
  # (On one line: the CLI's `-c key=value` keeps a value only up to its first newline.)
  if ! npm run --silent synth -- -c platformLlms="$(node -p 'JSON.stringify(require("./test/fixtures/platform-llms/tier.json"))')" -c corsAllowedOrigins="$(node -p 'JSON.stringify(require("./test/fixtures/cors/tier.json"))')" >"$log" 2>&1; then
    cat "$log"
    rm -f "$log"
    echo "npm run synth failed: the tier cannot run"
    echo "0 passed, 1 failed"
    exit 1
  fi
  rm -f "$log"
fi
npx vitest run --reporter=default --reporter=json --outputFile.json="$results" "$@"
code=$?
node -e '
const fs = require("fs");
const file = process.argv[1];
if (!fs.existsSync(file)) { console.log("0 passed, 1 failed"); process.exit(0); }
const r = JSON.parse(fs.readFileSync(file, "utf8"));
const skipped = (r.numPendingTests ?? 0) + (r.numTodoTests ?? 0);
// A file that fails to load has no test results of its own: count it as a failure.
const brokenFiles = (r.testResults ?? []).filter((f) => f.status === "failed" && (f.assertionResults ?? []).length === 0).length;
// A suite whose hook failed leaves its tests skipped, not failed: the exit code still says so, and so does this line.
const failed = r.numFailedTests + brokenFiles;
console.log(`${r.numPassedTests} passed, ${failed === 0 && process.argv[2] !== "0" ? 1 : failed} failed, ${skipped} skipped`);
' "$results" "$code"
exit $code
