// Runs before `npm start` and `npm test`: a fresh clone needs no separate install step.
// Plain JavaScript on purpose: it must run before any dependency exists.
import { execSync } from 'node:child_process';
import { existsSync } from 'node:fs';

if (!existsSync(new URL('../node_modules/.package-lock.json', import.meta.url))) {
  process.stderr.write('First run: installing dependencies (npm ci)...\n');
  execSync('npm ci --no-audit --no-fund', { stdio: 'inherit', cwd: new URL('..', import.meta.url) });
}

// The tests run the Lambda bundles on Node 24 and the sandbox program on Node 22 (scripts/node-runtimes,
// installed by the root postinstall): a checkout installed before that folder existed gets it here.
if (
  process.argv.includes('--runtimes') &&
  !existsSync(new URL('../scripts/node-runtimes/node_modules/.package-lock.json', import.meta.url))
) {
  process.stderr.write('Installing the Node versions the tests run (scripts/node-runtimes)...\n');
  execSync('npm ci --prefix scripts/node-runtimes --ignore-scripts --no-audit --no-fund', {
    stdio: 'inherit',
    cwd: new URL('..', import.meta.url),
  });
}
