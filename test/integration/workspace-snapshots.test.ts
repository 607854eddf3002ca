import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { SnapshotKeyError } from '#shared/sandboxes/snapshots/snapshot-model.ts';
import { s3SnapshotSigning } from '#shared/sandboxes/snapshots/snapshot-signing.ts';
import { WorkspaceSnapshots } from '#shared/sandboxes/snapshots/workspace-snapshots.ts';
import { packWorkspace, Snapshotter, uploadSnapshot, type SnapshotBridge } from '#sandbox/snapshots.ts';
import { BUCKET, CheckedS3 } from '#test/helpers/checked-s3.ts';

// The presigned flow for real: the control plane's signer, the sandbox's tar + form POST + GET,
// s3rver on loopback behind a proxy that checks each signed request (test/helpers/checked-s3.ts).
const SANDBOX = 'sbxaaaaaaaaaaaaaaaaaaaaaaaaaaaa1';
const OTHER = 'sbxbbbbbbbbbbbbbbbbbbbbbbbbbbbb2';
const LIMITS = { maxBytes: 64 * 1024, expiresSeconds: 120, maxObjects: 4 };
let s3: CheckedS3;
let workspace: string;

beforeAll(async () => {
  s3 = new CheckedS3();
  await s3.start();
}, 30_000);
afterAll(() => s3.stop());
beforeEach(() => {
  s3.intent = { sandboxId: SANDBOX, ...LIMITS };
  s3.refusals.length = 0;
  s3.accepted.length = 0;
  workspace = mkdtempSync(join(tmpdir(), 'ws-'));
});

/** The control plane's side of the bridge, as the bridge service does it: the pointer moves only on a verified upload. */
function controlPlane(snapshots: WorkspaceSnapshots, sandboxId = SANDBOX) {
  const state: { pointer: string | null; completes: string[] } = { pointer: null, completes: [] };
  const bridge: SnapshotBridge = {
    snapshotUpload: () => snapshots.upload(sandboxId),
    async snapshotComplete(key) {
      state.completes.push(key);
      if ((await snapshots.verify(sandboxId, key)) === null) throw new Error('no such snapshot');
      state.pointer = key;
    },
    snapshotDownload: async () => (state.pointer ? snapshots.download(sandboxId, state.pointer) : null),
  };
  return { state, bridge };
}

const logs: string[] = [];
const log = (_level: string, message: string, fields?: Record<string, unknown>) => {
  logs.push(`${message} ${JSON.stringify(fields ?? {})}`);
};

describe('workspace snapshots through presigned requests', () => {
  it('saves a workspace and restores it into an empty one', async () => {
    mkdirSync(join(workspace, 'src'));
    writeFileSync(join(workspace, 'src/app.ts'), 'export const x = 1;\n');
    writeFileSync(join(workspace, '.hidden'), 'dot');
    const { state, bridge } = controlPlane(new WorkspaceSnapshots(s3.client(), BUCKET, LIMITS, s3SnapshotSigning));
    const snapshotter = new Snapshotter(bridge, workspace, log);
    await snapshotter.request();
    expect(state.pointer).toMatch(new RegExp(`^sandboxes/${SANDBOX}/\\d{13}-[0-9a-f]{16}\\.tar\\.gz$`));

    const fresh = mkdtempSync(join(tmpdir(), 'ws-'));
    expect(await new Snapshotter(bridge, fresh, log).restore()).toBe(true);
    expect(readFileSync(join(fresh, 'src/app.ts'), 'utf8')).toBe('export const x = 1;\n');
    expect(readFileSync(join(fresh, '.hidden'), 'utf8')).toBe('dot');
    expect(s3.refusals).toEqual([]);
    expect(s3.accepted.map((a) => a.method)).toEqual(['POST', 'GET']);
    rmSync(fresh, { recursive: true });
  });

  it('puts each snapshot under a new key and restores the latest', async () => {
    const snapshots = new WorkspaceSnapshots(s3.client(), BUCKET, LIMITS, s3SnapshotSigning);
    const { state, bridge } = controlPlane(snapshots);
    const snapshotter = new Snapshotter(bridge, workspace, log);
    writeFileSync(join(workspace, 'f'), 'one');
    await snapshotter.request();
    const first = state.pointer;
    writeFileSync(join(workspace, 'f'), 'two');
    await snapshotter.request();
    expect(state.pointer).not.toBe(first);
    const fresh = mkdtempSync(join(tmpdir(), 'ws-'));
    await new Snapshotter(bridge, fresh, log).restore();
    expect(readFileSync(join(fresh, 'f'), 'utf8')).toBe('two');
    // Older snapshots go once a newer one is current; deleting the sandbox removes the rest.
    expect(await snapshots.prune(SANDBOX, state.pointer!)).toBeGreaterThanOrEqual(1);
    expect(await snapshots.verify(SANDBOX, first!)).toBeNull();
    expect(await snapshots.verify(SANDBOX, state.pointer!)).not.toBeNull();
  });

  it('refuses an upload over the size bound, and the pointer does not move', async () => {
    writeFileSync(join(workspace, 'big'), randomBytes(LIMITS.maxBytes * 2)); // incompressible
    const snapshots = new WorkspaceSnapshots(s3.client(), BUCKET, LIMITS, s3SnapshotSigning);
    const { state, bridge } = controlPlane(snapshots);
    // The sandbox program refuses to send it; a hostile one sending anyway is refused by S3 (the proxy here).
    await new Snapshotter(bridge, workspace, log).request();
    expect(state.pointer).toBeNull();
    const grant = await snapshots.upload(SANDBOX);
    const packed = await packWorkspace(workspace);
    await expect(
      uploadSnapshot({ ...grant, max_bytes: Number.MAX_SAFE_INTEGER }, packed.file, packed.bytes),
    ).rejects.toThrow(/refused \(403\)/);
    packed.cleanup();
    expect(s3.refusals).toContain('POST file outside content-length-range');
    await expect(bridge.snapshotComplete(grant.key)).rejects.toThrow('no such snapshot');
    expect(state.pointer).toBeNull();
  });

  it('refuses a tampered form: another key, a wider size bound, an expired policy', async () => {
    writeFileSync(join(workspace, 'f'), 'x');
    const packed = await packWorkspace(workspace);
    const snapshots = new WorkspaceSnapshots(s3.client(), BUCKET, LIMITS, s3SnapshotSigning);
    const grant = await snapshots.upload(SANDBOX);
    const otherKey = grant.key.replace(SANDBOX, OTHER);
    await expect(
      uploadSnapshot({ ...grant, fields: { ...grant.fields, key: otherKey } }, packed.file, packed.bytes),
    ).rejects.toThrow(/403/);
    const policy = JSON.parse(Buffer.from(grant.fields.Policy ?? '', 'base64').toString());
    policy.conditions = policy.conditions.map((c: unknown) =>
      Array.isArray(c) && c[0] === 'content-length-range' ? [c[0], 1, 10 ** 12] : c,
    );
    const widened = Buffer.from(JSON.stringify(policy)).toString('base64');
    await expect(
      uploadSnapshot({ ...grant, fields: { ...grant.fields, Policy: widened } }, packed.file, packed.bytes),
    ).rejects.toThrow(/403/);
    const brief = new WorkspaceSnapshots(s3.client(), BUCKET, { ...LIMITS, expiresSeconds: 1 }, s3SnapshotSigning);
    const old = await brief.upload(SANDBOX);
    await new Promise((r) => setTimeout(r, 2100));
    await expect(uploadSnapshot(old, packed.file, packed.bytes)).rejects.toThrow(/403/);
    packed.cleanup();
    expect(s3.refusals).toEqual([
      'POST key is not the signed key',
      'POST policy signature does not match',
      'POST policy expired',
    ]);
    expect(s3.accepted).toEqual([]);
  });

  it("signs nothing for another sandbox's objects, and a GET cannot be redirected to them", async () => {
    const mine = new WorkspaceSnapshots(s3.client(), BUCKET, LIMITS, s3SnapshotSigning);
    const theirs = controlPlane(mine, OTHER);
    writeFileSync(join(workspace, 'secret'), 'their private repo');
    s3.intent = { sandboxId: OTHER, ...LIMITS };
    await new Snapshotter(theirs.bridge, workspace, log).request();
    const theirKey = theirs.state.pointer!;
    s3.intent = { sandboxId: SANDBOX, ...LIMITS };

    await expect(mine.download(SANDBOX, theirKey)).rejects.toThrow(SnapshotKeyError);
    await expect(mine.verify(SANDBOX, theirKey)).rejects.toThrow(SnapshotKeyError);
    for (const bad of [`sandboxes/${SANDBOX}/../${OTHER}/x.tar.gz`, `sandboxes/${SANDBOX}/`, 'other/key']) {
      await expect(mine.download(SANDBOX, bad)).rejects.toThrow(SnapshotKeyError);
    }
    // A URL signed for my key, its path edited to theirs: the signature no longer matches.
    writeFileSync(join(workspace, 'secret'), 'mine');
    const { state, bridge } = controlPlane(mine);
    await new Snapshotter(bridge, workspace, log).request();
    const { url } = await mine.download(SANDBOX, state.pointer!);
    const res = await fetch(
      url.replace(encodeURIComponent(state.pointer!).replace(/%2F/g, '/'), theirKey).replace(state.pointer!, theirKey),
    );
    expect(res.status).toBe(403);
    expect(s3.refusals.at(-1)).toBe('GET signature does not match');
    // And its own prune never touches theirs.
    await mine.prune(SANDBOX);
    expect(await mine.verify(OTHER, theirKey)).not.toBeNull();
  });

  it('keeps at most one snapshot in flight; changes made meanwhile are saved by the next', async () => {
    const snapshots = new WorkspaceSnapshots(s3.client(), BUCKET, LIMITS, s3SnapshotSigning);
    const { state, bridge } = controlPlane(snapshots);
    const snapshotter = new Snapshotter(bridge, workspace, log);
    writeFileSync(join(workspace, 'f'), 'a');
    const first = snapshotter.request();
    writeFileSync(join(workspace, 'f'), 'b');
    const second = snapshotter.request();
    const third = snapshotter.request();
    expect(second).toBe(first);
    expect(third).toBe(first);
    await first;
    expect(state.completes.length).toBeLessThanOrEqual(2);
    const fresh = mkdtempSync(join(tmpdir(), 'ws-'));
    await new Snapshotter(bridge, fresh, log).restore();
    expect(readFileSync(join(fresh, 'f'), 'utf8')).toBe('b');
    expect(readdirSync(fresh)).toEqual(['f']);
  });

  it('without the presigners (the wiring of deletion and completion) checks and deletes objects but signs nothing', async () => {
    const signing = controlPlane(new WorkspaceSnapshots(s3.client(), BUCKET, LIMITS, s3SnapshotSigning));
    writeFileSync(join(workspace, 'f'), 'x');
    await new Snapshotter(signing.bridge, workspace, log).request();
    const key = signing.state.pointer!;
    const plain = new WorkspaceSnapshots(s3.client(), BUCKET, LIMITS);
    await expect(plain.upload(SANDBOX)).rejects.toThrow('This function signs no snapshot requests');
    await expect(plain.download(SANDBOX, key)).rejects.toThrow('This function signs no snapshot requests');
    expect(await plain.verify(SANDBOX, key)).toEqual(expect.any(Number));
    expect(await plain.prune(SANDBOX)).toBeGreaterThanOrEqual(1);
    expect(await plain.verify(SANDBOX, key)).toBeNull();
  });

  it('restores nothing when the sandbox has no snapshot yet', async () => {
    const { bridge } = controlPlane(new WorkspaceSnapshots(s3.client(), BUCKET, LIMITS, s3SnapshotSigning));
    expect(await new Snapshotter(bridge, workspace, log).restore()).toBe(false);
  });
});
