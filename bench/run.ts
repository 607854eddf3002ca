import { writeFileSync } from 'node:fs';
import { cpus, totalmem, type } from 'node:os';
import { benchSettings } from './settings.ts';

/**
 * `npm run bench`: runs every benchmark section and rewrites docs/performance.md with the machine
 * and the date. Figures, not pass/fail: timed assertions are flaky on shared machines.
 */
const sections: [string, () => Promise<string>][] = [['settings', benchSettings]];

const only = process.argv.slice(2);
const parts: string[] = [];
for (const [name, run] of sections) {
  if (only.length && !only.includes(name)) continue;
  process.stderr.write(`bench: ${name}...\n`);
  const text = await run();
  process.stdout.write(`${text}\n`);
  parts.push(text);
}

const machine = `${cpus().length} × ${cpus()[0]?.model.trim() ?? 'unknown CPU'}, ${Math.round(totalmem() / 2 ** 30)} GiB, ${type()}, Node ${process.version}`;
const doc = [
  '# Performance',
  '',
  'Written by `npm run bench` (do not edit by hand; run it again).',
  '',
  `- Machine: ${machine}`,
  `- Date: ${new Date().toISOString().slice(0, 10)}`,
  '',
  ...parts,
].join('\n');
if (!only.length) writeFileSync(new URL('../docs/performance.md', import.meta.url), doc);
process.exit(0);
