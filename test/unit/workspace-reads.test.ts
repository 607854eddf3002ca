import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiError } from '#shared/http/errors.ts';
import { directoryArchive, readArchive } from '#shared/sandboxes/snapshots/workspace-archive.ts';
import { toWorkspacePath } from '#shared/sandboxes/workspace-reads.ts';

// The control plane's side of workspace reads that runs without a sandbox: the path rules, and the
// reader of a paused sandbox's archive, given what `tar` makes and what a hostile agent could upload.

describe('toWorkspacePath', () => {
  const loc = ['query', 'path'];
  it('maps /workspace/project/... and relative paths to one relative path', () => {
    expect(toWorkspacePath('/workspace/project', loc)).toBe('');
    expect(toWorkspacePath('/workspace/project/', loc)).toBe('');
    expect(toWorkspacePath('/workspace/project/src//a.ts', loc)).toBe('src/a.ts');
    expect(toWorkspacePath('./src/./a.ts', loc)).toBe('src/a.ts');
    expect(toWorkspacePath('', loc)).toBe('');
  });

  it('refuses NUL bytes, over-long paths, absolute paths elsewhere and `..` (422 naming the field)', () => {
    for (const bad of [
      'a\0b',
      'x'.repeat(4097),
      '/etc/passwd',
      '/workspace/projectx',
      '/workspace/project/../x',
      'a/../../b',
      '..',
    ]) {
      let err: unknown;
      try {
        toWorkspacePath(bad, loc);
      } catch (e) {
        err = e;
      }
      expect(err, bad.slice(0, 30)).toBeInstanceOf(ApiError);
      expect((err as ApiError).status).toBe(422);
      expect(JSON.stringify((err as ApiError).body)).toContain('"loc":["query","path"]');
    }
  });
});

/** One tar header (GNU-ish, as a hostile uploader might write it) followed by its data, padded. */
function entry(name: string, data: Buffer | string, type = '0'): Buffer {
  const body = Buffer.from(data);
  const header = Buffer.alloc(512);
  header.write(name, 0, 100, 'utf8');
  header.write('0000644\0', 100);
  header.write('0000000\0', 108);
  header.write('0000000\0', 116);
  header.write(`${body.length.toString(8).padStart(11, '0')}\0`, 124);
  header.write('00000000000\0', 136);
  header.write(type, 156);
  header.write('ustar  \0', 257);
  header.fill(' ', 148, 156);
  let sum = 0;
  for (const b of header) sum += b;
  header.write(`${sum.toString(8).padStart(6, '0')}\0 `, 148);
  const pad = Buffer.alloc((512 - (body.length % 512)) % 512);
  return Buffer.concat([header, body, pad]);
}
const tarGz = (...entries: Buffer[]) => Readable.from([gzipSync(Buffer.concat([...entries, Buffer.alloc(1024)]))]);

describe('readArchive', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'archive-'));
    mkdirSync(join(dir, 'src', 'deep'), { recursive: true });
    mkdirSync(join(dir, 'node_modules', 'x'), { recursive: true });
    mkdirSync(join(dir, '.sandbox-state'), { recursive: true });
    writeFileSync(join(dir, 'a.txt'), 'alpha');
    writeFileSync(join(dir, 'src', 'b.ts'), 'beta');
    writeFileSync(join(dir, 'src', 'deep', `${'long-name-'.repeat(20)}.txt`), 'long');
    writeFileSync(join(dir, 'node_modules', 'x', 'i.js'), '');
    writeFileSync(join(dir, '.sandbox-state', 'agent.json'), '{}');
    writeFileSync(join(dir, 'big.bin'), Buffer.alloc(300 * 1024));
    symlinkSync('/etc/hostname', join(dir, 'leak'));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('lists what tar made: files under the path, sorted, pruned folders and links left out, long names whole', async () => {
    const all = await readArchive(directoryArchive(dir), 'list', '');
    expect(all).toEqual({
      op: 'list',
      files: ['a.txt', 'big.bin', `src/b.ts`, `src/deep/${'long-name-'.repeat(20)}.txt`].sort(),
      truncated: false,
    });
    expect(await readArchive(directoryArchive(dir), 'list', 'src/deep')).toEqual({
      op: 'list',
      files: [`${'long-name-'.repeat(20)}.txt`],
      truncated: false,
    });
    expect(await readArchive(directoryArchive(dir), 'list', 'nope')).toEqual({ error: 'not_found' });
    expect(await readArchive(directoryArchive(dir), 'list', 'a.txt')).toEqual({ error: 'not_a_file' });
  });

  it('reads one file, refuses a directory, a link and a file over 256 KiB', async () => {
    expect(await readArchive(directoryArchive(dir), 'file', 'src/b.ts')).toEqual({
      op: 'file',
      content_base64: Buffer.from('beta').toString('base64'),
    });
    expect(await readArchive(directoryArchive(dir), 'file', `src/deep/${'long-name-'.repeat(20)}.txt`)).toMatchObject({
      op: 'file',
    });
    expect(await readArchive(directoryArchive(dir), 'file', 'src')).toEqual({ error: 'not_a_file' });
    expect(await readArchive(directoryArchive(dir), 'file', 'leak')).toEqual({ error: 'not_found' });
    expect(await readArchive(directoryArchive(dir), 'file', 'big.bin')).toEqual({
      error: 'too_large',
      size: 300 * 1024,
    });
  });

  it('a hostile archive: names with `..` are never matched, a PAX path is read, a truncated one ends the read', async () => {
    const hostile = () =>
      tarGz(
        entry('../../etc/passwd', 'root:x'),
        entry('ok/../../escape', 'no'),
        entry('pax', '27 path=renamed/by-pax.txt\n', 'x'),
        entry('ignored-name', 'pax named'),
        entry('sym', '', '2'),
      );
    expect(await readArchive(hostile(), 'list', '')).toEqual({
      op: 'list',
      files: ['renamed/by-pax.txt'],
      truncated: false,
    });
    expect(await readArchive(hostile(), 'file', 'renamed/by-pax.txt')).toEqual({
      op: 'file',
      content_base64: Buffer.from('pax named').toString('base64'),
    });
    expect(await readArchive(hostile(), 'file', 'etc/passwd')).toEqual({ error: 'not_found' });
    // Cut inside the file's bytes (random, so they do not compress away).
    const cut = gzipSync(Buffer.concat([entry('a.txt', randomBytes(4000))])).subarray(0, 1500);
    expect(await readArchive(Readable.from([cut]), 'file', 'a.txt')).toEqual({ error: 'not_found' });
  });

  it('lists at most 2000 files, saying it stopped', async () => {
    const many = Array.from({ length: 2001 }, (_, i) => entry(`many/f${String(i).padStart(4, '0')}`, ''));
    const out = await readArchive(tarGz(...many), 'list', 'many');
    expect(out).toMatchObject({ op: 'list', truncated: true });
    expect((out as { files: string[] }).files).toHaveLength(2000);
  });

  it('stops at the byte bound (a gzip bomb) with a 504 that says to resume', async () => {
    const bomb = Readable.from([
      gzipSync(Buffer.concat([entry('zeros', Buffer.alloc(4 * 1024 * 1024)), Buffer.alloc(1024)])),
    ]);
    await expect(readArchive(bomb, 'file', 'other', { maxBytes: 1024 * 1024 })).rejects.toMatchObject({ status: 504 });
  });

  it('tar itself archives links as links (the local adapter)', () => {
    const listing = execFileSync('tar', ['-tvzf', '-'], {
      input: execFileSync('tar', ['-cz', '-C', dir, './leak']),
    }).toString();
    expect(listing).toContain('leak -> /etc/hostname');
  });
});
