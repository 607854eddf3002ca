import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { EditorError, FileEditor } from '#sandbox/agent/tools/editor.ts';

let dir: string;
let outside: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'agent-tools-'));
  outside = mkdtempSync(join(tmpdir(), 'agent-outside-'));
});
afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
  rmSync(outside, { recursive: true, force: true });
});

describe('FileEditor', () => {
  const file = () => join(dir, 'a.txt');

  it('creates a file (parents included) and refuses to overwrite one', async () => {
    const ed = new FileEditor(dir);
    const r = await ed.run({ command: 'create', path: 'src/new.ts', file_text: 'export {};\n' });
    expect(r.output).toContain('File created successfully');
    expect(readFileSync(join(dir, 'src/new.ts'), 'utf8')).toBe('export {};\n');
    await expect(ed.run({ command: 'create', path: 'src/new.ts', file_text: 'x' })).rejects.toThrow(/already exists/);
    await expect(ed.run({ command: 'create', path: 'b.txt' })).rejects.toThrow(/needs file_text/);
  });

  it('str_replace replaces a unique occurrence and shows a numbered snippet', async () => {
    writeFileSync(file(), 'one\ntwo\nthree\n');
    const ed = new FileEditor(dir);
    const r = await ed.run({ command: 'str_replace', path: file(), old_str: 'two', new_str: 'TWO\nand a half' });
    expect(readFileSync(file(), 'utf8')).toBe('one\nTWO\nand a half\nthree\n');
    expect(r.output).toContain('     2\tTWO');
    expect(r.output).toContain('     3\tand a half');
  });

  it('str_replace refuses text that is missing or not unique, naming the lines', async () => {
    writeFileSync(file(), 'x = 1\ny = 2\nx = 1\n');
    const ed = new FileEditor(dir);
    await expect(ed.run({ command: 'str_replace', path: file(), old_str: 'z = 3', new_str: '' })).rejects.toThrow(
      /did not appear verbatim/,
    );
    await expect(ed.run({ command: 'str_replace', path: file(), old_str: 'x = 1', new_str: 'x = 9' })).rejects.toThrow(
      /occurs 2 times, at lines 1, 3/,
    );
    await expect(ed.run({ command: 'str_replace', path: file(), old_str: '', new_str: 'a' })).rejects.toThrow(
      /non-empty old_str/,
    );
    expect(readFileSync(file(), 'utf8')).toBe('x = 1\ny = 2\nx = 1\n');
  });

  it('insert adds text after a line (0 = top) and checks the line number', async () => {
    writeFileSync(file(), 'a\nb');
    const ed = new FileEditor(dir);
    await ed.run({ command: 'insert', path: 'a.txt', insert_line: 1, new_str: 'between' });
    expect(readFileSync(file(), 'utf8')).toBe('a\nbetween\nb');
    await ed.run({ command: 'insert', path: 'a.txt', insert_line: 0, new_str: 'top' });
    expect(readFileSync(file(), 'utf8')).toBe('top\na\nbetween\nb');
    await expect(ed.run({ command: 'insert', path: 'a.txt', insert_line: 9, new_str: 'x' })).rejects.toThrow(
      /between 0 and 4/,
    );
  });

  it('undo_edit restores each previous version in turn, and removes a file that create made', async () => {
    writeFileSync(file(), 'v1');
    const ed = new FileEditor(dir);
    await ed.run({ command: 'str_replace', path: 'a.txt', old_str: 'v1', new_str: 'v2' });
    await ed.run({ command: 'insert', path: 'a.txt', insert_line: 1, new_str: 'v3' });
    await ed.run({ command: 'undo_edit', path: 'a.txt' });
    expect(readFileSync(file(), 'utf8')).toBe('v2');
    await ed.run({ command: 'undo_edit', path: 'a.txt' });
    expect(readFileSync(file(), 'utf8')).toBe('v1');
    await expect(ed.run({ command: 'undo_edit', path: 'a.txt' })).rejects.toThrow(/No edit/);

    await ed.run({ command: 'create', path: 'made.txt', file_text: 'm' });
    await ed.run({ command: 'undo_edit', path: 'made.txt' });
    expect(existsSync(join(dir, 'made.txt'))).toBe(false);
  });

  it('view shows numbered lines, a range, or a directory two levels deep without hidden entries', async () => {
    writeFileSync(file(), 'l1\nl2\nl3\nl4');
    mkdirSync(join(dir, 'd1/d2/d3'), { recursive: true });
    writeFileSync(join(dir, 'd1/d2/deep.txt'), '');
    writeFileSync(join(dir, 'd1/d2/d3/too-deep.txt'), '');
    mkdirSync(join(dir, '.git'));
    const ed = new FileEditor(dir);
    expect((await ed.run({ command: 'view', path: 'a.txt' })).output).toContain('     4\tl4');
    const range = (await ed.run({ command: 'view', path: 'a.txt', view_range: [2, 3] })).output;
    expect(range).toContain('     2\tl2\n     3\tl3');
    expect(range).not.toContain('l4');
    expect((await ed.run({ command: 'view', path: 'a.txt', view_range: [3, -1] })).output).toContain('     4\tl4');
    await expect(ed.run({ command: 'view', path: 'a.txt', view_range: [3, 9] })).rejects.toThrow(/view_range/);
    const listing = (await ed.run({ command: 'view', path: '.' })).output;
    expect(listing).toContain('d1/d2/');
    expect(listing).not.toContain('deep.txt');
    expect(listing).not.toContain('.git');
    await expect(ed.run({ command: 'view', path: 'missing.txt' })).rejects.toThrow(/does not exist/);
  });

  it('refuses binary files', async () => {
    writeFileSync(join(dir, 'bin'), Buffer.from([0x7f, 0x45, 0x00, 0x01]));
    await expect(new FileEditor(dir).run({ command: 'view', path: 'bin' })).rejects.toThrow(/binary/);
  });

  it('confines every path to the workspace: .., absolute paths and symbolic links', async () => {
    writeFileSync(join(outside, 'secret.txt'), 'outside');
    symlinkSync(outside, join(dir, 'link'));
    const ed = new FileEditor(dir);
    for (const path of ['../x.txt', join(outside, 'secret.txt'), 'link/secret.txt', 'link/new.txt', '/etc/passwd']) {
      await expect(ed.run({ command: 'view', path }), path).rejects.toThrow(EditorError);
      await expect(ed.run({ command: 'create', path, file_text: 'x' }), path).rejects.toThrow(/outside the workspace/);
    }
    expect(existsSync(join(outside, 'new.txt'))).toBe(false);
    // An absolute path inside the workspace is fine.
    await ed.run({ command: 'create', path: join(dir, 'inside.txt'), file_text: 'ok' });
    expect(readFileSync(join(dir, 'inside.txt'), 'utf8')).toBe('ok');
  });
});

describe('repository microagents', () => {
  it('reads front matter (inline and block triggers), skips README, and matches triggers case-insensitively', async () => {
    const { loadMicroagents, triggered } = await import('#sandbox/agent/microagents.ts');
    const md = join(dir, '.openhands/microagents');
    mkdirSync(join(md, 'knowledge'), { recursive: true });
    writeFileSync(join(md, 'repo.md'), '---\nname: repo\n---\nRun tests with `make test`.\n');
    writeFileSync(
      join(md, 'knowledge/docker.md'),
      '---\nname: docker\ntriggers: [docker, "container"]\n---\nUse podman here.',
    );
    writeFileSync(join(md, 'knowledge/k8s.md'), '---\ntriggers:\n  - kubectl\n  - helm\n---\nCluster is minikube.');
    writeFileSync(join(md, 'README.md'), 'not a microagent');
    const agents = await loadMicroagents(dir);
    expect(agents).toEqual([
      { name: 'docker', triggers: ['docker', 'container'], content: 'Use podman here.' },
      { name: 'knowledge/k8s', triggers: ['kubectl', 'helm'], content: 'Cluster is minikube.' },
      { name: 'repo', triggers: [], content: 'Run tests with `make test`.' },
    ]);
    expect(triggered(agents, 'Build the Docker image').map((a) => a.name)).toEqual(['docker']);
    expect(triggered(agents, 'nothing relevant')).toEqual([]);
    expect(await loadMicroagents(outside)).toEqual([]);
  });
});
