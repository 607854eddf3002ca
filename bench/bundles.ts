import { bundleStats } from '#infra/bundle.ts';
import { lambdaEntries } from '#infra/functions.ts';
import { count, percentile } from './stats.ts';

const LOADS = 5;
/** The yardstick: a DynamoDB document client and one GetItem, bundled the same way. */
const MINIMAL = 'bench/minimal-handler.ts';

/**
 * Every Lambda entry bundled exactly as CDK bundles it (infra/bundle.ts), its size, and how long a
 * fresh Node process takes to import it: the part of a cold start that the code decides. Each next
 * to the minimal handler, measured in the same run (before and after the entries, so a change in the
 * machine's load shows in both).
 */
export async function benchBundles(): Promise<string> {
  const before = await bundleStats(MINIMAL, LOADS);
  const rows: { entry: string; kb: number; loadMs: number; cpuMs: number }[] = [];
  for (const entry of lambdaEntries()) {
    const s = await bundleStats(entry, LOADS);
    rows.push({ entry, kb: s.bytes / 1024, loadMs: s.loadMs, cpuMs: s.cpuMs });
  }
  const after = await bundleStats(MINIMAL, LOADS);
  const minimal = { kb: before.bytes / 1024, loadMs: (before.loadMs + after.loadMs) / 2, cpuMs: (before.cpuMs + after.cpuMs) / 2 };
  const routes = rows.filter((r) => r.entry !== 'functions/fallback.ts');
  const kbs = routes.map((r) => r.kb);
  const loads = routes.map((r) => r.loadMs);
  const cpus = routes.map((r) => r.cpuMs);
  const ratio = (ms: number) => `${(ms / minimal.loadMs).toFixed(2)}×`;
  const cpuRatio = (ms: number) => `${(ms / minimal.cpuMs).toFixed(2)}×`;
  return [
    '## Lambda bundles',
    '',
    `Each of the ${rows.length} Lambda entries (one per route, plus the authorizer, the fallback route, the ECS event handler and the sweeper) bundled with the options CDK uses (\`infra/bundle.ts\`: ESM, minified, AWS SDK included, its default credential chain replaced by a reader of the environment Lambda fills), then imported by a bare \`node\` process: load time is the median of ${LOADS} processes, measured from just before the \`import()\` to its end (wall time, and the CPU time the process spent, which a busy shared machine disturbs less), so Node's own start-up is left out. It is the part of a cold start the code decides; Lambda adds its own runtime start. Measured on Node ${process.versions.node}, while Lambda runs Node 24.`,
    '',
    `The yardstick is \`${MINIMAL}\`, a DynamoDB document client and one GetItem bundled the same way: ${count(minimal.kb)} KB, ${minimal.loadMs.toFixed(1)} ms (the mean of its median before and after the entries: ${before.loadMs.toFixed(1)} and ${after.loadMs.toFixed(1)} ms). Each entry carries the AWS adapters its entry names (\`shared/wiring/aws/*.ts\`), so the health and docs routes carry no SDK client, most routes only DynamoDB's, only functions that start or stop sandboxes ECS's, and only those that sign or delete snapshots S3's.`,
    '',
    `Over the ${routes.length} entries other than the fallback: size median ${count(percentile(kbs, 50))} KB, largest ${count(Math.max(...kbs))} KB; load median ${percentile(loads, 50).toFixed(1)} ms (${ratio(percentile(loads, 50))} the minimal handler's), slowest ${Math.max(...loads).toFixed(1)} ms; CPU median ${percentile(cpus, 50).toFixed(1)} ms (${cpuRatio(percentile(cpus, 50))}).`,
    '',
    '| entry | bundle size | module load | load / minimal | load CPU | CPU / minimal |',
    '|---|---|---|---|---|---|',
    `| \`${MINIMAL}\` | ${count(minimal.kb)} KB | ${minimal.loadMs.toFixed(1)} ms | 1.00× | ${minimal.cpuMs.toFixed(1)} ms | 1.00× |`,
    ...rows.map((r) => `| \`${r.entry}\` | ${count(r.kb)} KB | ${r.loadMs.toFixed(1)} ms | ${ratio(r.loadMs)} | ${r.cpuMs.toFixed(1)} ms | ${cpuRatio(r.cpuMs)} |`),
    '',
  ].join('\n');
}
