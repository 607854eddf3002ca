import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startLocalStack, type LocalStack } from '#infra/local/stack.ts';

const CEILING = 40;
const STARTS = 20;

function percentile(samples: number[], p: number): number {
  const sorted = [...samples].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))] ?? NaN;
}
const ms = (n: number) => `${Math.round(n)} ms`;

async function call(stack: LocalStack, method: string, path: string): Promise<any> {
  const res = await fetch(`${stack.url}${path}`, { method, headers: { 'x-session-api-key': stack.devKey } });
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${await res.text()}`);
  return res.json();
}

/** Polls every 10 ms (that is the resolution of the figures) until the sandbox is RUNNING; bounded. */
async function untilRunning(stack: LocalStack, id: string): Promise<void> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    const [s] = await call(stack, 'GET', `/api/v1/sandboxes?id=${id}`);
    if (s.status === 'RUNNING') return;
    if (s.status !== 'STARTING') throw new Error(`sandbox ${id} is ${s.status}: ${s.detail}`);
    if (Date.now() > deadline) throw new Error(`sandbox ${id} did not reach RUNNING in 60 s`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

async function startToRunning(stack: LocalStack): Promise<{ id: string; ms: number }> {
  const t = performance.now();
  const { id } = await call(stack, 'POST', '/api/v1/sandboxes');
  await untilRunning(stack, id);
  return { id, ms: performance.now() - t };
}

/**
 * Local sandboxes (child processes running sandbox/main.ts through tsx): start-to-RUNNING over 20
 * starts, pause and resume latency, and how many running sandboxes this machine holds before a
 * start takes twice as long as on an idle machine (stopping at a ceiling).
 */
export async function benchSandboxes(): Promise<string> {
  const dataDir = mkdtempSync(join(tmpdir(), 'acs-bench-sandboxes-'));
  const stack = await startLocalStack({
    port: 0,
    host: '127.0.0.1',
    dataDir,
    memory: true,
    sweepIntervalMs: 3_600_000,
    sandboxes: { maxRunning: CEILING + 10 },
  });
  try {
    // One unmeasured start warms tsx's cache and the handlers.
    const warm = await startToRunning(stack);
    await call(stack, 'DELETE', `/api/v1/sandboxes/${warm.id}`);

    const starts: number[] = [];
    for (let i = 0; i < STARTS; i++) {
      const s = await startToRunning(stack);
      starts.push(s.ms);
      await call(stack, 'DELETE', `/api/v1/sandboxes/${s.id}`);
    }

    const pauses: number[] = [];
    const resumes: number[] = [];
    const one = await startToRunning(stack);
    for (let i = 0; i < 10; i++) {
      let t = performance.now();
      await call(stack, 'POST', `/api/v1/sandboxes/${one.id}/pause`);
      pauses.push(performance.now() - t);
      t = performance.now();
      await call(stack, 'POST', `/api/v1/sandboxes/${one.id}/resume`);
      await untilRunning(stack, one.id);
      resumes.push(performance.now() - t);
    }
    await call(stack, 'DELETE', `/api/v1/sandboxes/${one.id}`);

    // Keep sandboxes running and watch the next start's latency against the idle-machine median.
    const baseline = percentile(starts, 50);
    let held = 0;
    let slowInARow = 0;
    let doubledAt: number | undefined;
    const loaded: number[] = [];
    while (held < CEILING) {
      const s = await startToRunning(stack);
      held++;
      loaded.push(s.ms);
      // Two slow starts in a row, so one hiccup on a shared machine does not decide it.
      slowInARow = s.ms > 2 * baseline ? slowInARow + 1 : 0;
      if (slowInARow === 2) {
        doubledAt = held - 2;
        break;
      }
    }
    const capacity =
      doubledAt === undefined
        ? `more than ${CEILING} (the ceiling; the ${CEILING}th start took ${ms(loaded.at(-1)!)})`
        : `${doubledAt} (start ${doubledAt + 1} took ${ms(loaded[doubledAt]!)}, more than twice ${ms(baseline)})`;

    return [
      '## Sandboxes (local: child processes)',
      '',
      'A start is `POST /api/v1/sandboxes` until `GET` shows RUNNING, i.e. the program checked in over the bridge',
      '(polled every 10 ms). Pause is the `POST .../pause` call (the process has exited when it returns); resume',
      'is `POST .../resume` until RUNNING again.',
      '',
      '| Measure | Value |',
      '|---|---|',
      `| start → RUNNING, p50 of ${STARTS} | ${ms(percentile(starts, 50))} |`,
      `| start → RUNNING, p99 of ${STARTS} | ${ms(percentile(starts, 99))} |`,
      `| pause, p50 / p99 of ${pauses.length} | ${ms(percentile(pauses, 50))} / ${ms(percentile(pauses, 99))} |`,
      `| resume → RUNNING, p50 / p99 of ${resumes.length} | ${ms(percentile(resumes, 50))} / ${ms(percentile(resumes, 99))} |`,
      `| sandboxes running before a start takes twice the idle p50 | ${capacity} |`,
      '',
    ].join('\n');
  } finally {
    await stack.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
}
