import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { settingsFieldNames } from '#shared/settings/model.ts';

const root = join(import.meta.dirname, '../..');

/**
 * The settings something outside the settings module acts on, and the module that reads each: the
 * start configuration (which the sandbox program and its agent run with) and a sandbox's launch options.
 * Checked both ways against the sources below, so a field that starts or stops doing something moves here.
 */
const settingsReaders: Record<string, string> = {
  language: 'shared/conversations/start-config.ts',
  agent: 'shared/conversations/start-config.ts',
  max_iterations: 'shared/conversations/start-config.ts',
  security_analyzer: 'shared/conversations/start-config.ts',
  confirmation_mode: 'shared/conversations/start-config.ts',
  llm_model: 'shared/conversations/start-config.ts',
  llm_api_key: 'shared/conversations/start-config.ts',
  llm_base_url: 'shared/conversations/start-config.ts',
  secrets_store: 'shared/conversations/start-config.ts',
  enable_default_condenser: 'shared/conversations/start-config.ts',
  condenser_max_size: 'shared/conversations/start-config.ts',
  mcp_config: 'shared/conversations/start-config.ts',
  search_api_key: 'shared/conversations/start-config.ts',
  max_budget_per_task: 'shared/conversations/start-config.ts',
  git_user_name: 'shared/conversations/start-config.ts',
  git_user_email: 'shared/conversations/start-config.ts',
  remote_runtime_resource_factor: 'shared/sandboxes/runtime/sandbox-runtime.ts',
  sandbox_base_container_image: 'shared/sandboxes/runtime/sandbox-runtime.ts',
  sandbox_runtime_container_image: 'shared/sandboxes/runtime/sandbox-runtime.ts',
};

/** Every `.ts` source of the services, the functions and the sandbox program, but the settings module itself. */
function sources(): string[] {
  const out: string[] = [];
  const walk = (dir: string) => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, e.name);
      if (e.isDirectory()) walk(path);
      else if (e.name.endsWith('.ts')) out.push(relative(root, path));
    }
  };
  for (const dir of ['shared', 'functions', 'sandbox']) walk(join(root, dir));
  return out.filter((p) => !p.startsWith('shared/settings/'));
}

/** `settings.<field>` and `settings?.<field>` reads of a settings field, by file. */
function readsIn(files: string[]): Map<string, Set<string>> {
  const fields = new Set<string>(settingsFieldNames());
  const reads = new Map<string, Set<string>>();
  for (const file of files) {
    for (const m of readFileSync(join(root, file), 'utf8').matchAll(/\bsettings\??\.([a-z_]+)/g)) {
      if (!fields.has(m[1]!)) continue;
      if (!reads.has(m[1]!)) reads.set(m[1]!, new Set());
      reads.get(m[1]!)!.add(file);
    }
  }
  return reads;
}

/** Words that say a field does nothing on the server. */
const INERT = /no effect|stored for clients|no server behaviour/i;

const rows = () =>
  [...readFileSync(join(root, 'docs/settings.md'), 'utf8').matchAll(/^\| `([a-z_]+)` \| (.+) \|$/gm)].map((m) => ({
    field: m[1]!,
    effect: m[2]!.trim(),
  }));

describe('docs/settings.md', () => {
  it('has one row per settings field, and no row for a field the schema does not have', () => {
    expect(
      rows()
        .map((r) => r.field)
        .sort(),
    ).toEqual([...settingsFieldNames()].sort());
    for (const r of rows()) expect(r.effect.length, r.field).toBeGreaterThan(20);
  });

  it('the map of settings read is the sources: each named module reads its field, and no other field is read', () => {
    const reads = readsIn(sources());
    expect([...reads.keys()].sort()).toEqual(Object.keys(settingsReaders).sort());
    for (const [field, file] of Object.entries(settingsReaders)) expect(reads.get(field), field).toContain(file);
  });

  it('says "no effect" (or "stored for clients") exactly for the fields nothing reads', () => {
    for (const r of rows()) {
      if (r.field in settingsReaders)
        expect(r.effect, `${r.field} is read by ${settingsReaders[r.field]}`).not.toMatch(INERT);
      else expect(r.effect, `${r.field}: nothing reads it`).toMatch(INERT);
    }
  });

  it('is live: a row saying "no effect" for a field that is read fails, and so does a read field missing from the map', () => {
    expect('Stored; no effect yet.').toMatch(INERT);
    const planted = readsIn(['shared/sandboxes/runtime/sandbox-runtime.ts']);
    expect(planted.get('remote_runtime_resource_factor')).toBeDefined();
    expect(readsIn(['shared/conversations/start-config.ts']).has('email_verified')).toBe(false);
  });
});
