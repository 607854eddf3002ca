import { bundleStats } from '#infra/bundle.ts';
import { lambdaEntries } from '#infra/functions.ts';
import { count, percentile } from './stats.ts';

const LOADS = 3;

/**
 * Every Lambda entry bundled exactly as CDK bundles it (infra/bundle.ts), its size, and how long a
 * fresh Node process takes to import it: the part of a cold start that the code decides.
 */
export async function benchBundles(): Promise<string> {
  const rows: { entry: string; kb: number; loadMs: number }[] = [];
  for (const entry of lambdaEntries()) {
    const s = await bundleStats(entry, LOADS);
    rows.push({ entry, kb: s.bytes / 1024, loadMs: s.loadMs });
  }
  const kbs = rows.map((r) => r.kb);
  const loads = rows.map((r) => r.loadMs);
  return [
    '## Lambda bundles',
    '',
    `Each of the ${rows.length} Lambda entries (one per route, plus the authorizer, the fallback route, the ECS event handler and the sweeper) bundled with the options CDK uses (\`infra/bundle.ts\`: ESM, minified, AWS SDK included), then imported by a bare \`node\` process: load time is the median of ${LOADS} processes, measured from just before the \`import()\` to its end, so Node's own start-up is left out. It is the part of a cold start the code decides; Lambda adds its own runtime start. Measured on Node ${process.versions.node}, while Lambda runs Node 24.`,
    '',
    'Route bundles are all about the same size because each imports `shared/wiring/aws.ts`, which imports every AWS adapter (its lazy getters put off creating clients, not bundling them); `functions/fallback.ts`, which needs no services, shows what the route table (with its zod schemas) and the logger weigh alone.',
    '',
    `Over all entries: size median ${count(percentile(kbs, 50))} KB, largest ${count(Math.max(...kbs))} KB; load median ${percentile(loads, 50).toFixed(1)} ms, slowest ${Math.max(...loads).toFixed(1)} ms.`,
    '',
    '| entry | bundle size | module load |',
    '|---|---|---|',
    ...rows.map((r) => `| \`${r.entry}\` | ${count(r.kb)} KB | ${r.loadMs.toFixed(1)} ms |`),
    '',
  ].join('\n');
}
