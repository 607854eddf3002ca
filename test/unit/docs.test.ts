import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';

const root = new URL('../../', import.meta.url).pathname;
const TOP = /^(shared|functions|infra|test|sandbox|bench|docs|scripts|config|\.ci)\//;

function markdownFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const full = join(dir, name);
    if (['node_modules', '.git', '.data', 'cdk.out'].includes(name)) return [];
    if (statSync(full).isDirectory()) return markdownFiles(full);
    return name.endsWith('.md') ? [full] : [];
  });
}

/** Repository paths a document names: relative links, and code spans that start at a top-level folder. */
function namedPaths(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  const out: string[] = [];
  for (const m of text.matchAll(/\]\(([^)#\s]+)(#[^)]*)?\)/g)) {
    const target = m[1]!;
    if (/^[a-z]+:/.test(target)) continue;
    out.push(relative(root, join(dirname(file), target)));
  }
  for (const m of text.matchAll(/`([^`\s]+)`/g)) {
    const span = m[1]!.replace(/[:,.]$/, '');
    if (TOP.test(span) && !/[<>*{}$]/.test(span)) out.push(span);
  }
  return out;
}

describe('docs', () => {
  const files = markdownFiles(root);
  it('exist', () => {
    expect(files.map((f) => relative(root, f))).toEqual(
      expect.arrayContaining(['README.md', 'docs/architecture.md', 'docs/data-model.md']),
    );
  });
  it.each(files.map((f) => [relative(root, f), f] as const))('%s names only paths that exist', (_name, file) => {
    const missing = namedPaths(file).filter((p) => !existsSync(join(root, p)));
    expect(missing).toEqual([]);
  });
});
