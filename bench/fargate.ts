import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { estimatedStartDelays } from '#test/tier/aws.ts';
import { waitFor } from '#test/helpers/wait.ts';
import { createKey } from '#test/tier/flows.ts';
import { ready, withPool } from '#test/tier/pool.ts';
import { startTier, type TierStack } from '#test/tier/stack.ts';
import { ms as msDigits, p50p99, percentile } from './stats.ts';

/** Timed warm starts with an empty workspace (`BENCH_TIER_STARTS` for a quick check). */
const TIER_STARTS = Number(process.env.BENCH_TIER_STARTS ?? 8);
/** Timed warm resumes with a 50 MB workspace. */
const TIER_RESTORES = Number(process.env.BENCH_TIER_RESTORES ?? 3);
/** The fake ECS's start delays, as a share of docs/performance.md's estimates (1: the default distribution). */
const TIER_SCALE = Number(process.env.BENCH_TIER_SCALE ?? 1);
const MB50 = 50 * 1024 * 1024;
const ms = (n: number) => msDigits(n, 0);

/** GET the sandbox every 20 ms until `done` (the figures' resolution); an ERROR ends it at once. */
const poll = (tier: TierStack, key: string, id: string, done: (s: any) => boolean, timeoutMs = 120_000) =>
  waitFor(
    `sandbox ${id}`,
    async () => {
      const s = (await tier.call('GET', `/api/v1/sandboxes?id=${id}`, { key })).body?.[0];
      if (s?.status === 'ERROR') throw new Error(`bench: sandbox ${id} failed: ${s.detail}`);
      return s;
    },
    { until: done, timeoutMs, intervalMs: 20 },
  );

/** POST (a start or a resume) until the API shows RUNNING: the ms and the sandbox as then. */
async function timed(tier: TierStack, key: string, path: string, id?: string) {
  const t = performance.now();
  const res = await tier.call('POST', path, { key });
  if (res.status !== 200) throw new Error(`bench: ${path} answered ${res.status}: ${JSON.stringify(res.body)}`);
  const sandbox = await poll(tier, key, id ?? res.body.id, (s) => s?.status === 'RUNNING');
  return { ms: performance.now() - t, sandbox };
}

/** Cold starts timed together at the start, before any standby is ready (`BENCH_TIER_COLD`). */
const TIER_COLD = Number(process.env.BENCH_TIER_COLD ?? 3);

/** The p50 of one phase over some starts' `start_phases`, as text ('—' where none has it). */
const phase = (all: Record<string, number>[], name: string) => {
  const values = all.map((p) => p[name]).filter((v): v is number => typeof v === 'number');
  return values.length ? ms(percentile(values, 50)) : '—';
};

/**
 * The tier (test/tier/README.md: the synthesized stack's bundles under its IAM, the fake ECS running the
 * real sandbox program after start delays drawn from the estimates below): every phase of cold starts,
 * of starts served by the warm pool with an empty workspace, and of resumes served by the pool with a
 * 50 MB workspace (its restore, after RUNNING, a phase of its own), beside the estimates for AWS with
 * their sources (issue 26). Needs `npm run synth`.
 */
export async function benchFargateTier(): Promise<string> {
  // Every timed warm start finds a ready standby: the pool is as large as the starts, filled once.
  const size = Math.max(TIER_STARTS, TIER_RESTORES * 2, 1);
  const tier = await startTier({
    mutate: (t) => {
      if (!withPool(t, { size, idleMinutes: 30, spot: false }))
        throw new Error('bench: no function reads SANDBOX_SPECS');
    },
    startDelays: estimatedStartDelays(TIER_SCALE),
  });
  try {
    // The first starts find the pool empty (it opens at the first, and its standbys pay the same delays):
    // made at once, by users of their own (each within its running limit), all are cold.
    const coldKeys = await Promise.all(
      Array.from({ length: TIER_COLD }, (_, i) => createKey(tier, `bench-tier-cold-${i}`)),
    );
    const colds = await Promise.all(coldKeys.map((k) => timed(tier, k, '/api/v1/sandboxes')));
    if (colds.some((c) => c.sandbox.start_phases?.warm)) throw new Error('bench: a first start was warm');
    const key = await createKey(tier, 'bench-tier');
    const empty: number[] = [];
    const warmPhases: Record<string, number>[] = [];
    for (let i = 0; i < TIER_STARTS; i++) {
      await ready(tier, 1, 180_000);
      const warm = await timed(tier, key, '/api/v1/sandboxes');
      if (!warm.sandbox.start_phases?.warm)
        throw new Error(`bench: start ${i} was cold: ${warm.sandbox.start_phases?.cold_reason}`);
      empty.push(warm.ms);
      warmPhases.push(warm.sandbox.start_phases);
    }
    const resumes: number[] = [];
    const resumePhases: Record<string, number>[] = [];
    for (let i = 0; i < TIER_RESTORES; i++) {
      await ready(tier, 1, 180_000);
      const first = await timed(tier, key, '/api/v1/sandboxes');
      const task = [...tier.aws.tasks.values()].find(
        (t) =>
          t.desiredStatus === 'RUNNING' && t.tags?.some((g) => g.key === 'sandbox-id' && g.value === first.sandbox.id),
      )!;
      writeFileSync(join(tier.aws.taskPath(task.taskArn, '/workspace'), 'big.bin'), randomBytes(MB50));
      await tier.call('POST', `/api/v1/sandboxes/${first.sandbox.id}/pause`, { key });
      const saved = Date.now() + 120_000;
      while (task.lastStatus !== 'STOPPED' || tier.aws.objectKeys(`sandboxes/${first.sandbox.id}/`).length !== 1) {
        if (Date.now() > saved) throw new Error('bench: the 50 MB snapshot was not saved');
        await new Promise((r) => setTimeout(r, 50));
      }
      await ready(tier, 1, 180_000);
      const resumed = await timed(tier, key, `/api/v1/sandboxes/${first.sandbox.id}/resume`, first.sandbox.id);
      if (!resumed.sandbox.start_phases?.warm) throw new Error(`bench: resume ${i} was cold`);
      resumes.push(resumed.ms);
      resumePhases.push(
        (await poll(tier, key, first.sandbox.id, (s) => s?.start_phases?.restore_ms !== undefined)).start_phases,
      );
      await tier.call('DELETE', `/api/v1/sandboxes/${first.sandbox.id}`, { key });
    }
    const coldPhases = colds.map((c) => c.sandbox.start_phases as Record<string, number>);
    const coldTotals = colds.map((c) => c.ms);
    const scale = TIER_SCALE === 1 ? 'the default distribution' : `${TIER_SCALE} × the default distribution`;
    const n = (what: string, count: number) => `${what} (p50 of ${count})`;
    return [
      '## Sandboxes in the tier and on AWS: every phase of a start',
      '',
      `The tier (test/tier/README.md) runs the synthesized stack: each function's bundle under its role, API Gateway's routes and authorizer, the fake ECS running the real sandbox program after PROVISIONING and PENDING delays drawn from ${scale} (the AWS column's estimates: 5-15 s and 8-20 s, uniform), with ECS's task timestamps, so the record's phases are computed as on AWS. A pool of ${size} is filled after the cold starts and before the timed warm ones. A start is the POST until \`GET /api/v1/sandboxes?id=\` shows RUNNING (polled every 20 ms); the phases are the sandbox's own \`start_phases\` (what \`GET /api/v1/sandboxes\` shows and the check-in writes as CloudWatch metrics). A cold start is a RunTask; a warm one is a claim (one conditional write), a wake-up pushed on the waiting standby's pool socket, its \`wait=0\` call that takes the binding, and its check-in as the sandbox. The 50 MB case pauses a sandbox after writing 50 MB of random bytes into its workspace (a 50 MB snapshot in the emulated S3), then resumes it into a standby: RUNNING comes at the check-in, the restore follows as its own phase. Targets (issue 26): warm start → RUNNING at most 1.5 s p50, for an empty workspace and a 50 MB one.`,
      '',
      `| phase | ${n('cold start, tier', colds.length)} | ${n('warm start, tier, empty workspace', empty.length)} | ${n('warm resume, tier, 50 MB', resumes.length)} | on AWS (estimate, sources below) |`,
      '|---|---|---|---|---|',
      `| \`RunTask\` call (cold) or the claim (warm: \`claim_ms\`) | ${phase(coldPhases, 'run_task_ms')} | ${phase(warmPhases, 'claim_ms')} | ${phase(resumePhases, 'claim_ms')} | one API call; a claim is one conditional write and a push |`,
      `| PROVISIONING (capacity, the task's network interface) | ${phase(coldPhases, 'provisioning_ms')} | — | — | 5-15 s [3] |`,
      `| PENDING (the image pull, all of it: no cache) | ${phase(coldPhases, 'pending_ms')} | — | — | 8-20 s for ~100 MB [2][4] |`,
      `| container start → check-in (warm: the claim → the acknowledged binding) | ${phase(coldPhases, 'check_in_ms')} | ${phase(warmPhases, 'check_in_ms')} | ${phase(resumePhases, 'check_in_ms')} | < 1 s (Node's start, one HTTPS check-in; a cold Lambda 0.2-0.5 s more) |`,
      `| **start → RUNNING** | **${ms(percentile(coldTotals, 50))}** | **${p50p99(empty, 0)}** (p50 / p99) | **${resumes.length ? p50p99(resumes, 0) : 'none'}** (p50 / p99) | **cold about 15-35 s; warm about 1 s** |`,
      `| the snapshot restore, after RUNNING (\`restore_ms\`) | — | — | ${phase(resumePhases, 'restore_ms')} | scales with the workspace (an S3 GET and an unpack): measure at the first deployment |`,
      '',
      "The pool's price: standby time is the operator's (a user's billing starts at the claim); a pool of 1 that never drains costs about $32.7 a month on demand and $12.6 on Spot, a pool of 5 about $163 and $63, and an idle deployment nothing: the pool drains after `idleMinutes` without a start (docs/cost.md, \"The warm pool\").",
      '',
    ].join('\n');
  } finally {
    await tier.bus.settle();
    await tier.aws.settle();
    await tier.stop();
  }
}

/**
 * Fargate start-to-RUNNING on paper: no AWS account runs here, so this section is an estimate with
 * its sources, kept beside the measured figures (it measures nothing and runs at once).
 */
export async function benchFargate(): Promise<string> {
  return [
    '## Fargate on paper: our image, and what shortens its start',
    '',
    '_Estimates, not measurements (nothing here runs on AWS), with their sources: the AWS column of the table above comes from them. Replace them with measured figures (`startLatencyMs` and the phases in the `sandbox.started` log line, the `Start*` CloudWatch metrics) once a deployment runs._',
    '',
    "**The image** (`sandbox/Dockerfile`, built for ARM64 by the CDK asset, its layers zstd-compressed): `node:22-bookworm-slim` (about 220 MB uncompressed [1], some 70-80 MB compressed at the usual 1:3 on binaries, zstd a little smaller than gzip: an estimate), one `apt-get` layer with git (and the perl it pulls), curl, ca-certificates, bash and tmux (roughly 50-70 MB uncompressed, 20-25 MB compressed: an estimate from the Debian packages' sizes), the bundled program `main.mjs` (about 1.4 MB) and an empty `/workspace`: about 100 MB to pull in 8 layers, 7 of them the base image's and the apt layer, which no task shares with another (Fargate caches no image between tasks [2]). The deploy records the pushed image's compressed size in a stack output; `aws ecr describe-images` gives it too.",
    '',
    "**Where the time goes** (ECS's task states [3]): `RunTask` → PROVISIONING (capacity, the task's own network interface: 5-15 s), PENDING (the whole image pulled and unpacked, no file system to mount: workspaces are S3 snapshots restored after check-in; 8-20 s for ~100 MB, the pull being most of a container start [4]), container start → check-in (Node starts the program, about 0.05 s locally, then one HTTPS check-in through API Gateway and a Lambda: under a second), and the record is RUNNING when the check-in returns; the restore follows and scales with the workspace. About 15-35 s in all, cold.",
    '',
    '**What each lever gives our image:**',
    '',
    "- **ARM64** (what the stack uses): the same start path; Fargate's ARM64 price is lower per vCPU and GB than x86 [5]. Spot takes ARM64 tasks on platform 1.4.0 or later (below).",
    '- **SOCI index** (lazy loading): AWS recommends it for images above about 250 MB [2]; ours is ~100 MB of mostly small layers, which gain little, and at launch SOCI on Fargate covered X86_64 only [6]. Worth it only if the image grows (language toolchains for the agent): then gzip layers and a SOCI index manifest v2 built at deploy time (`SociIndexV2Build` of `@cdklabs/deploy-time-build`, docs/deploy.md), the large layers last. Whether Fargate now lazy-loads ARM64 images: verify at the first deployment.',
    '- **zstd-compressed layers**: up to 27 % shorter task starts in AWS\'s tests, larger images gaining most [7]; the stack builds the image so (`--output type=image,compression=zstd,force-compression=true,oci-mediatypes=true`, docs/deploy.md "The sandbox image"), no runtime change; the layers reach ECR as zstd only from Docker\'s containerd image store: verify at the first deployment.',
    '- **Fargate Spot**: cheaper; the ECS API reference (CapacityProviderStrategyItem) now says FARGATE_SPOT takes Linux ARM64 tasks on platform 1.4.0 or later, where older guides and translations still say X86_64 only [8], and a spec may ask for it (`spot`, with `spot_fallback` to on-demand); in times of high demand Spot capacity may be unavailable and starts are delayed [9], and a task gets a two-minute warning before it is reclaimed [8] (our stop timeout is 120 s for that reason). Spot lowers the price of an hour, never the start time.',
    '- **Smaller image**: the base is most of the bytes; a distroless Node base is about 140 MB uncompressed instead of 220 [1], but the agent needs git, bash and tmux, which distroless lacks.',
    '',
    "**The path to ≤ 20 s**, in order of certainty: (1) ECR in the task's region with the ECR and S3 VPC endpoints, so the pull stays on AWS's network [2]; (2) zstd layers [7]; (3) keep the apt layer to what the agent needs, so the pull stays near 100 MB; these give the lower half of the range above, about 15-20 s. (4) The sure way below 20 s, whatever AWS's provisioning does on a given day, is not to start a task on the user's request at all: the warm pool (a spec's `warmPool`, off by default on AWS, `npm start` keeps 1; docs/architecture.md, \"The warm pool\") keeps standby tasks started and checked in without a user, and a start claims one (one conditional write), pushes it the enrollment (a wake-up on its pool socket, then one `wait=0` call), and the task's acknowledged binding is its RUNNING; the workspace snapshot is restored after that, as a phase of its own. Start → RUNNING is then the claim plus the binding, about a second, at the price of the pool's idle task-hours (docs/cost.md, \"The warm pool\"). A standby serves only starts of its spec with the default image and resource factor 1 (ECS fixes those at `RunTask`); other starts are cold and say why (`start_phases.cold_reason` in `GET /api/v1/sandboxes`). The tier emulates these estimates (the section above, at full scale; test/tier/warm-pool.test.ts at a tenth, a claimed start without the delays a cold one pays) and the section above shows a claimed start RUNNING within 1.5 s; the section \"Sandboxes from the warm pool (local)\" measures the local path.",
    '',
    "Sources: [1] labs.iximiuz.com/tutorials/how-to-choose-nodejs-container-image (node:22-slim 220 MB, distroless nodejs22 141 MB); [2] docs.aws.amazon.com/AmazonECS/latest/developerguide/fargate-pull-behavior.html (each task pulls the whole image; same-region ECR, VPC endpoints, smaller images, zstd; lazy loading for images above 250 MB); [3] docs.aws.amazon.com/AmazonECS/latest/developerguide/task-lifecycle-explanation.html; [4] github.com/awslabs/soci-snapshotter (image download is 76 % of container start time, after Harter et al., FAST '16); [5] help.nops.io/inform/supported-recommendations/migrate-fargate-tasks-to-graviton.md and the Fargate pricing page; [6] infoq.com/news/2023/08/fargate-fast-startup-soci (at launch: platform 1.4.0, X86_64); [7] aws.amazon.com/blogs/containers/reducing-aws-fargate-startup-times-with-zstd-compressed-container-images (up to 27 %); [8] docs.aws.amazon.com/AmazonECS/latest/APIReference/API_CapacityProviderStrategyItem.html (FARGATE_SPOT: X86_64 on platform 1.3.0+, ARM64 on 1.4.0+) and docs.aws.amazon.com/AmazonECS/latest/userguide/fargate-capacity-providers.html (two-minute warning; older text: X86_64 only); [9] docs.aws.amazon.com/AmazonECS/latest/bestpracticesguide/ec2-and-fargate-spot.html (Spot capacity may be unavailable at high demand; tasks are delayed).",
    '',
  ].join('\n');
}
