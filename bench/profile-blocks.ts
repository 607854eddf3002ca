import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/**
 * `npx tsx bench/profile-blocks.ts <file.cpuprofile> [blocks]`: the main thread's longest synchronous
 * blocks in a CPU profile (bench/neighbours.ts writes one per phase with `BENCH_NEIGHBOUR_CPU_PROF`): a
 * block is a run of samples with no idle one between, which is how long a request arriving in it waits.
 * Prints how many blocks passed 5, 10 and 20 ms, the busy share, the heaviest functions by self time,
 * and for each of the longest blocks the functions it spent its time in (inclusive, this repo's own and
 * the packages').
 */
interface Node {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
interface Profile {
  nodes: Node[];
  samples: number[];
  timeDeltas: number[];
}

const frameName = (n: Node) => {
  const url = n.callFrame.url.replace(/^file:\/\//, '');
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url)?.[1];
  const where = pkg ?? url.replace(/^.*?\/(shared|infra|bench|test)\//, '$1/').replace(/^node:/, 'node:');
  return `${n.callFrame.functionName || '(anonymous)'} ${where ? `(${where}${pkg ? '' : `:${n.callFrame.lineNumber + 1}`})` : ''}`.trim();
};

export function summarize(profile: Profile, blocksShown = 8): string {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const idle = (id: number) => byId.get(id)!.callFrame.functionName === '(idle)';
  const stack = (id: number) => {
    const out: Node[] = [];
    for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) out.push(byId.get(at)!);
    return out;
  };
  // A sample's time is the delta to the next one.
  const dt = (i: number) => (profile.timeDeltas[i + 1] ?? 0) / 1000;
  const blocks: { from: number; to: number; ms: number }[] = [];
  let total = 0;
  for (let i = 0; i < profile.samples.length; i++) total += dt(i);
  let busy = 0;
  const self = new Map<string, number>();
  for (let i = 0; i < profile.samples.length; ) {
    if (idle(profile.samples[i]!)) {
      i++;
      continue;
    }
    const from = i;
    let ms = 0;
    for (; i < profile.samples.length && !idle(profile.samples[i]!); i++) {
      ms += dt(i);
      const leaf = frameName(byId.get(profile.samples[i]!)!);
      self.set(leaf, (self.get(leaf) ?? 0) + dt(i));
    }
    busy += ms;
    blocks.push({ from, to: i, ms });
  }
  const over = (t: number) => blocks.filter((b) => b.ms > t).length;
  const lines = [
    `${(total / 1000).toFixed(1)} s profiled, main thread busy ${((busy / total) * 100).toFixed(1)}%; ${blocks.length} blocks, ${over(5)} over 5 ms, ${over(10)} over 10 ms, ${over(20)} over 20 ms`,
    'heaviest by self time:',
    ...[...self.entries()]
      .sort((a, b) => b[1] - a[1])
      .slice(0, 25)
      .map(
        ([name, ms]) => `  ${((ms / busy) * 100).toFixed(1).padStart(5)}%  ${ms.toFixed(0).padStart(6)} ms  ${name}`,
      ),
  ];
  for (const b of [...blocks].sort((x, y) => y.ms - x.ms).slice(0, blocksShown)) {
    const inclusive = new Map<string, number>();
    for (let i = b.from; i < b.to; i++) {
      const seen = new Set<string>();
      for (const n of stack(profile.samples[i]!)) seen.add(frameName(n));
      for (const name of seen) inclusive.set(name, (inclusive.get(name) ?? 0) + dt(i));
    }
    lines.push(`block of ${b.ms.toFixed(1)} ms:`);
    for (const [name, ms] of [...inclusive.entries()]
      .filter(([name]) => !/^\((root|program)\)/.test(name))
      .sort((x, y) => y[1] - x[1])
      .slice(0, 30))
      lines.push(`  ${ms.toFixed(1).padStart(6)} ms  ${name}`);
  }
  return lines.join('\n');
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const file = process.argv[2];
  if (!file) {
    process.stderr.write('usage: npx tsx bench/profile-blocks.ts <file.cpuprofile> [blocks]\n');
    process.exit(2);
  }
  process.stdout.write(
    `${summarize(JSON.parse(readFileSync(file, 'utf8')) as Profile, Number(process.argv[3] ?? 8))}\n`,
  );
}
