import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { detectContainment } from '#shared/sandboxes/runtime/containment.ts';
import { ProcessSandboxRuntime } from '#shared/sandboxes/runtime/process-sandbox-runtime.ts';
import { PROJECT_ROOT } from '#shared/wiring/local.ts';
import { sandboxPids } from '#test/helpers/sandboxes.ts';
import { sandboxRuntimeContract } from '#test/contract/sandbox-runtime.contract.ts';

const spec = (id: string, command: string[]) => ({
  id,
  command,
  created_at: '2025-11-01T00:00:00.000Z',
  initial_env: {},
  working_dir: '{data_dir}/sandboxes/{sandbox_id}/workspace',
  cpu: null,
  memory: null,
});

sandboxRuntimeContract('process (real child processes)', async () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'acs-runtime-'));
  const runtime = new ProcessSandboxRuntime({
    dataDir,
    projectRoot: PROJECT_ROOT,
    containment: detectContainment(),
    onStopped: () => undefined,
    graceMs: 2000,
  });
  return {
    runtime,
    spec: spec('sleeper', ['node', '-e', 'setInterval(() => {}, 60000)']),
    badSpec: spec('missing-binary', ['/nonexistent/program']),
    runningFor: async (id) => sandboxPids(id).length,
    close: async () => {
      await runtime.stopAll();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
});
