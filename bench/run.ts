import { readFileSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, totalmem, type } from 'node:os';
import { benchAgent } from './agent.ts';
import { benchBundles } from './bundles.ts';
import { benchConsole } from './console.ts';
import { benchConversations, benchEventRoutes } from './conversations.ts';
import { benchFargate, benchFargateTier } from './fargate.ts';
import { benchLists } from './lists.ts';
import { benchLlmGateway } from './llm-gateway.ts';
import { benchLoad } from './load.ts';
import { benchNeighbours } from './neighbours.ts';
import { benchSandboxes } from './sandboxes.ts';
import { benchSettings } from './settings.ts';
import { benchStream } from './stream.ts';
import { benchMetering, benchUsage } from './usage.ts';
import { benchWarmPool } from './warm-pool.ts';

/**
 * `npm run bench`: runs every benchmark section and rewrites docs/performance.md with the machine
 * and the date. Figures, not pass/fail: timed assertions are flaky on shared machines.
 * `npm run bench -- <section>...` runs only those sections and prints them without writing the doc.
 */
const sections: [string, () => Promise<string>][] = [
  ['settings', benchSettings],
  ['bundles', benchBundles],
  ['sandboxes', benchSandboxes],
  ['warm-pool', benchWarmPool],
  ['conversations', benchConversations],
  ['events', benchEventRoutes],
  ['lists', benchLists],
  ['usage', benchUsage],
  ['metering', benchMetering],
  ['agent', benchAgent],
  ['console', benchConsole],
  ['stream', benchStream],
  ['llm', benchLlmGateway],
  ['load', benchLoad],
  ['neighbours', benchNeighbours],
  ['fargate-tier', benchFargateTier],
  ['fargate', benchFargate],
];

// `--update`: the named sections replace theirs in docs/performance.md (new ones go before the last
// section), and the header says when they were re-run: for a section added or changed since the full run.
const update = process.argv.includes('--update');
const only = process.argv.slice(2).filter((a) => a !== '--update');
if (update && !only.length) {
  process.stderr.write('bench: --update needs the sections to re-run\n');
  process.exit(2);
}
const unknown = only.filter((name) => !sections.some(([s]) => s === name));
if (unknown.length) {
  process.stderr.write(
    `bench: unknown section ${unknown.join(', ')}; sections: ${sections.map(([s]) => s).join(', ')}\n`,
  );
  process.exit(2);
}

const started = performance.now();
const load = loadavg()[0]!;
const parts: string[] = [];
const durations: string[] = [];
for (const [name, run] of sections) {
  if (only.length && !only.includes(name)) continue;
  process.stderr.write(`bench: ${name}...\n`);
  const t = performance.now();
  const text = await run();
  const seconds = (performance.now() - t) / 1000;
  process.stderr.write(`bench: ${name} took ${seconds.toFixed(0)} s\n`);
  durations.push(`${name} ${seconds.toFixed(0)} s`);
  process.stdout.write(`${text}\n`);
  parts.push(text);
}

const machine = `${cpus().length} × ${cpus()[0]?.model.trim() ?? 'unknown CPU'}, ${Math.round(totalmem() / 2 ** 30)} GiB, ${type()}, Node ${process.version}`;
const doc = [
  '# Performance',
  '',
  'Written by `npm run bench` (do not edit by hand; run it again).',
  '',
  `- Machine: ${machine}; load average ${load.toFixed(2)} when the run began`,
  `- Date: ${new Date().toISOString().slice(0, 10)}`,
  `- Run time: ${((performance.now() - started) / 60_000).toFixed(1)} min (${durations.join(', ')})`,
  '',
  '## How to read these figures',
  '',
  '- Everything runs on one machine over loopback: the local gateway, dynalite (in memory, two of them, each in a worker thread of the',
  "  gateway's process, where the client that measures runs too; the events table has one to itself), sandboxes as child processes, and a scripted LLM",
  '  that answers at once.',
  '  The figures compare parts of this codebase with each other and over time; they are not AWS latencies. On AWS,',
  '  each DynamoDB call costs a few milliseconds of network where dynalite costs about one of CPU, and Lambda adds',
  '  cold starts (the bundle section shows the part of those the code decides).',
  '- p50 is the median; p99 is the nearest-rank 99th percentile, which for 20 samples is the slowest one.',
  '- The machine may be shared (see the load average above): compare runs from the same machine, and read a single',
  '  p99 as "it can be this slow", not as a property of the code.',
  '',
  ...parts,
].join('\n');
const docUrl = new URL('../docs/performance.md', import.meta.url);
if (!only.length) writeFileSync(docUrl, doc);
else if (update) writeFileSync(docUrl, updated(readFileSync(docUrl, 'utf8'), parts, load));

/** The doc with each `## ` block of `texts` in place of the block of the same heading (or before the last block). */
function updated(current: string, texts: string[], loadAverage: number): string {
  const blocks = (text: string) => text.split(/\n(?=## )/);
  const [head, ...rest] = blocks(current);
  const byHeading = (b: string) => b.slice(0, b.indexOf('\n'));
  for (const block of texts.flatMap(blocks)) {
    const at = rest.findIndex((b) => byHeading(b) === byHeading(block));
    if (at >= 0) rest[at] = `${block.trimEnd()}\n`;
    else rest.splice(Math.max(0, rest.length - 1), 0, `${block.trimEnd()}\n`);
  }
  // One line per re-run, so a section re-run earlier keeps saying when (a section re-run again moves to the new line).
  const RERUN = /^- Re-run since, alone: (.+) on (\S+) \(load average/;
  const lines = head!
    .split('\n')
    .map((l) => {
      const m = RERUN.exec(l);
      if (!m) return l;
      const kept = m[1]!.split(', ').filter((name) => !only.includes(name));
      return kept.length ? l.replace(m[1]!, kept.join(', ')) : undefined;
    })
    .filter((l): l is string => l !== undefined);
  const stamp = `- Re-run since, alone: ${only.join(', ')} on ${new Date().toISOString().slice(0, 10)} (load average ${loadAverage.toFixed(2)} when they began)`;
  const last = lines.findLastIndex((l) => l.startsWith('- Re-run since, alone:') || l.startsWith('- Run time:'));
  lines.splice(last + 1, 0, stamp);
  return [lines.join('\n'), ...rest].join('\n');
}
process.exit(0);
