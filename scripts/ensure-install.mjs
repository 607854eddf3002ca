// Runs before `npm start` and `npm test`: a fresh clone needs no separate install step.
// Plain JavaScript on purpose: it must run before any dependency exists.
import { execSync } from 'node:child_process';
import { existsSync } from 'node:fs';

if (!existsSync(new URL('../node_modules/.package-lock.json', import.meta.url))) {
  process.stderr.write('First run: installing dependencies (npm ci)...\n');
  execSync('npm ci --no-audit --no-fund', { stdio: 'inherit', cwd: new URL('..', import.meta.url) });
}
