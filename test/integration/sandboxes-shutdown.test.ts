import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { startLocalStack } from '#infra/local/stack.ts';
import { sandboxPids } from '#test/helpers/sandboxes.ts';
import { waitFor } from '#test/helpers/wait.ts';

describe('the local stack', () => {
  it('stops every sandbox process when it closes and records them as PAUSED', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'acs-close-'));
    try {
      const local = await startLocalStack({
        port: 0,
        host: '127.0.0.1',
        dataDir,
        memory: false,
        sweepIntervalMs: 3_600_000,
      });
      const headers = { 'x-session-api-key': local.devKey };
      const ids: string[] = [];
      for (let i = 0; i < 2; i++)
        ids.push(
          ((await (await fetch(`${local.url}/api/v1/sandboxes`, { method: 'POST', headers })).json()) as { id: string })
            .id,
        );
      await waitFor('both processes', () => (ids.every((id) => sandboxPids(id).length === 1) ? true : undefined));
      // Both checked in (RUNNING): a sandbox still starting when the server stops is another case (MISSING on restart).
      await waitFor('both RUNNING', async () => {
        const res = await fetch(`${local.url}/api/v1/sandboxes?id=${ids[0]}&id=${ids[1]}`, { headers });
        const list = (await res.json()) as { status: string }[];
        return list.every((s) => s?.status === 'RUNNING') ? true : undefined;
      });
      await local.close();
      for (const id of ids) expect(sandboxPids(id)).toEqual([]);

      const again = await startLocalStack({
        port: 0,
        host: '127.0.0.1',
        dataDir,
        memory: false,
        sweepIntervalMs: 3_600_000,
      });
      try {
        const res = await fetch(`${again.url}/api/v1/sandboxes?id=${ids[0]}&id=${ids[1]}`, {
          headers: { 'x-session-api-key': again.devKey },
        });
        const list = (await res.json()) as any[];
        expect(list.map((s) => [s.status, s.detail])).toEqual([
          ['PAUSED', 'Paused because the local server stopped'],
          ['PAUSED', 'Paused because the local server stopped'],
        ]);
      } finally {
        await again.close();
      }
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
