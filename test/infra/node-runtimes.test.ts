import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Runtime } from 'aws-cdk-lib/aws-lambda';
import { describe, expect, it } from 'vitest';
import { nodeBinary } from '#test/helpers/node-runtimes.ts';

const root = join(import.meta.dirname, '../..');
const major = (version: string) => Number(/^v?(\d+)\./.exec(version)?.[1]);

describe('the Node versions the tests run are the ones that ship', () => {
  it("the tier's Lambda runtime is the functions' (nodejs24.x)", () => {
    const fn = readFileSync(join(root, 'infra/constructs/service-function.ts'), 'utf8');
    const runtime = /Runtime\.(NODEJS_\d+_X)/.exec(fn)?.[1] as keyof typeof Runtime;
    expect(Runtime[runtime]).toBeDefined();
    const shipped = Number(/nodejs(\d+)\.x/.exec((Runtime[runtime] as Runtime).name)?.[1]);
    expect(shipped).toBe(24);
    expect(major(execFileSync(nodeBinary(24), ['--version'], { encoding: 'utf8' }))).toBe(shipped);
  });

  it("the sandbox program's tests run the image's Node (node:22)", () => {
    const dockerfile = readFileSync(join(root, 'sandbox/Dockerfile'), 'utf8');
    const bases = [...dockerfile.matchAll(/^FROM node:(\d+)-/gm)].map((m) => Number(m[1]));
    expect(bases.length).toBeGreaterThan(0);
    for (const base of bases) expect(base).toBe(22);
    expect(major(execFileSync(nodeBinary(22), ['--version'], { encoding: 'utf8' }))).toBe(22);
  });
});
