import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { daysOf, exportKey, previousDay } from '#shared/billing/export.ts';
import { folderSink } from '#shared/billing/folder-sink.ts';

const dir = mkdtempSync(join(tmpdir(), 'acs-sink-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('the local export folder', () => {
  it('writes a period whole under its key, replaces it on a re-run, and refuses keys that leave the folder', async () => {
    const sink = folderSink(dir);
    const key = exportKey('2026-11-25', '2026-11-25');
    expect(key).toBe('focus-1.2/2026-11-25_2026-11-25.csv');
    const path = await sink.put(key, 'a\r\n');
    expect(path).toBe(join(dir, key));
    await sink.put(key, 'b\r\n');
    expect(readFileSync(path, 'utf8')).toBe('b\r\n');
    // No temporary file left behind.
    expect(readdirSync(join(dir, 'focus-1.2'))).toEqual(['2026-11-25_2026-11-25.csv']);
    await expect(sink.put('../escape.csv', 'x')).rejects.toThrow(/outside/);
    await expect(sink.put('/etc/passwd', 'x')).rejects.toThrow(/outside/);
  });

  it('the daily run takes the UTC day before; a period is its days inclusive', () => {
    expect(previousDay(new Date('2026-03-01T00:15:00Z'))).toBe('2026-02-28');
    expect(previousDay(new Date('2026-01-01T23:59:59Z'))).toBe('2025-12-31');
    expect(daysOf('2024-02-28', '2024-03-01')).toEqual(['2024-02-28', '2024-02-29', '2024-03-01']);
    expect(daysOf('2024-03-01', '2024-02-28')).toEqual([]);
  });
});
