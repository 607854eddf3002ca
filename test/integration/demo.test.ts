import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

describe('npm run demo', () => {
  it('shows a conversation step by step and ends with its workspace, where the agent wrote its file', () => {
    const res = spawnSync(process.execPath, ['--import', 'tsx', 'scripts/demo.ts'], {
      cwd: new URL('../../', import.meta.url).pathname,
      env: { ...process.env, POWERTOOLS_LOG_LEVEL: 'WARN' },
      encoding: 'utf8',
      timeout: 120_000,
    });
    expect(res.status, res.stderr).toBe(0);
    const out = res.stdout;
    expect(out).toContain('Start task: READY');
    expect(out).toMatch(/agent ▶ execute_bash: ls -la/);
    expect(out).toMatch(/agent ▶ str_replace_editor: create hello\.py/);
    expect(out).toContain("Hello from the agent's sandbox");
    expect(out).toMatch(/Conversation [0-9a-f]{32}: finished/);
    const workspace = /Workspace: (\S+)/.exec(out)?.[1];
    expect(workspace && existsSync(join(workspace, 'hello.py'))).toBe(true);
    expect(readFileSync(join(workspace!, 'hello.py'), 'utf8')).toContain('Hello from the agent');
  }, 150_000);
});
