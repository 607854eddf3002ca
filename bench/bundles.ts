import { bundleStats } from '#infra/bundle.ts';
import { lambdaEntries } from '#infra/functions.ts';
import { count, percentile } from './stats.ts';

const LOADS = 5;
/** The yardstick: a DynamoDB document client and one GetItem, bundled the same way. */
const MINIMAL = 'bench/minimal-handler.ts';

/**
 * Every Lambda entry bundled exactly as CDK bundles it (infra/bundle.ts), its size, and how long a
 * fresh Node process takes to import it: the part of a cold start that the code decides. Each entry
 * is measured right after the minimal handler, and its ratio is to that measurement: a shared
 * machine's load drifts over a run, and a pair measured together sees the same load.
 */
export async function benchBundles(): Promise<string> {
  const rows: { entry: string; kb: number; loadMs: number; cpuMs: number; ratio: number; cpuRatio: number }[] = [];
  const minimal: { kb: number; loadMs: number; cpuMs: number }[] = [];
  for (const entry of lambdaEntries()) {
    const m = await bundleStats(MINIMAL, LOADS);
    const s = await bundleStats(entry, LOADS);
    minimal.push({ kb: m.bytes / 1024, loadMs: m.loadMs, cpuMs: m.cpuMs });
    rows.push({
      entry,
      kb: s.bytes / 1024,
      loadMs: s.loadMs,
      cpuMs: s.cpuMs,
      ratio: s.loadMs / m.loadMs,
      cpuRatio: s.cpuMs / m.cpuMs,
    });
  }
  const routes = rows.filter((r) => r.entry !== 'functions/fallback.ts');
  const median = (xs: number[]) => percentile(xs, 50);
  const kbs = routes.map((r) => r.kb);
  const times = (ms: number) => `${ms.toFixed(2)}×`;
  const m = {
    kb: minimal[0]!.kb,
    loadMs: median(minimal.map((x) => x.loadMs)),
    cpuMs: median(minimal.map((x) => x.cpuMs)),
  };
  return [
    '## Lambda bundles',
    '',
    `Each of the ${rows.length} Lambda entries (one per route, plus the event functions of \`shared/functions.ts\`: the authorizer, the fallback route, ECS events, the sweeper, snapshot removal, the WebSocket APIs' functions) bundled with the options CDK uses (\`infra/bundle.ts\`: ESM, minified, AWS SDK included, its default credential chain replaced by a reader of the environment Lambda fills), then imported by a bare \`node\` process: load time is the median of ${LOADS} processes, measured from just before the \`import()\` to its end (wall time, and the CPU time the process spent, which a busy shared machine disturbs less), so Node's own start-up is left out. It is the part of a cold start the code decides; Lambda adds its own runtime start. Measured on Node ${process.versions.node}, while Lambda runs Node 24.`,
    '',
    `The yardstick is \`${MINIMAL}\`, a DynamoDB document client and one GetItem bundled the same way (${count(m.kb)} KB), measured right before each entry; an entry's ratio is to that measurement, so both saw the same load (the yardstick's own medians over the run: ${m.loadMs.toFixed(1)} ms, CPU ${m.cpuMs.toFixed(1)} ms). Each entry carries the services its entry names (\`shared/services/*.ts\`) and the AWS builders of the adapters derived from them and its grants (\`infra/function-adapters.ts\`), so the health and docs routes carry no SDK client and no service, most routes only DynamoDB's, only functions that start or stop sandboxes ECS's, and only the bridge's snapshot routes and the snapshot-removal function S3's (its presigners only where uploads and downloads are signed). And each builds only its own route's schemas, at its first request: the route table holds none, model and protocol schemas are \`z.lazy\`, an operation's schemas a function; and they are \`zod/mini\` (\`shared/zod.ts\`): zod's classic API is in no bundle.`,
    '',
    `Over the ${routes.length} entries other than the fallback: size median ${count(median(kbs))} KB, largest ${count(Math.max(...kbs))} KB; load / minimal median ${times(median(routes.map((r) => r.ratio)))}, largest ${times(Math.max(...routes.map((r) => r.ratio)))}; CPU / minimal median ${times(median(routes.map((r) => r.cpuRatio)))}.`,
    '',
    '| entry | bundle size | module load | load / minimal | load CPU | CPU / minimal |',
    '|---|---|---|---|---|---|',
    ...rows.map(
      (r) =>
        `| \`${r.entry}\` | ${count(r.kb)} KB | ${r.loadMs.toFixed(1)} ms | ${times(r.ratio)} | ${r.cpuMs.toFixed(1)} ms | ${times(r.cpuRatio)} |`,
    ),
    '',
  ].join('\n');
}
