import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { settingsFieldNames } from '#shared/settings/model.ts';

describe('docs/settings.md', () => {
  it('has one row per settings field, and no row for a field the schema does not have', () => {
    const doc = readFileSync(join(import.meta.dirname, '../../docs/settings.md'), 'utf8');
    const rows = [...doc.matchAll(/^\| `([a-z_]+)` \| (.+) \|$/gm)].map((m) => ({
      field: m[1]!,
      effect: m[2]!.trim(),
    }));
    expect(rows.map((r) => r.field).sort()).toEqual([...settingsFieldNames()].sort());
    for (const r of rows) expect(r.effect.length, r.field).toBeGreaterThan(20);
  });
});
