#!/usr/bin/env bash
# The test command (`npm test`): vitest over every suite, then the closing line CI reads.
set -uo pipefail
cd "$(dirname "$0")/.."
results=.test-results.json
rm -f "$results"
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
console.log(`${r.numPassedTests} passed, ${r.numFailedTests + brokenFiles} failed, ${skipped} skipped`);
' "$results"
exit $code
