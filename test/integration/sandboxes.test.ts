import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { getSandbox, processEnv, sandboxPids, waitForSandboxStatus } from '#test/helpers/sandboxes.ts';
import { waitFor } from '#test/helpers/wait.ts';
import { startTestStack, type TestStack } from '#test/helpers/stack.ts';

let stack: TestStack;
beforeAll(async () => {
  stack = await startTestStack({ sandboxes: { maxRunning: 50 } });
});
afterAll(() => stack?.stop());

const bridge = (id: string, path: string) => `/api/v1/sandboxes/${id}/bridge/${path}`;

async function startRunning(key?: string): Promise<any> {
  const res = await stack.call('POST', '/api/v1/sandboxes', { key });
  expect(res.status).toBe(200);
  expect(res.body.status).toBe('STARTING');
  expect(res.body.session_api_key).toBeNull();
  return waitForSandboxStatus(stack, res.body.id, 'RUNNING', key);
}

const workspace = (id: string) => join(stack.dataDir, 'sandboxes', id, 'workspace');

describe('sandbox lifecycle over HTTP, with real child processes', () => {
  it('is RUNNING only once the program checked in, and never shows its session key', async () => {
    const sandbox = await startRunning();
    expect(sandbox).toMatchObject({
      created_by_user_id: 'dev',
      sandbox_spec_id: 'local-default',
      exposed_urls: [],
      detail: null,
      contained: true,
    });
    expect(sandbox.session_api_key).toBeNull();
    expect(await stack.sandboxKey(sandbox.id)).toMatch(/^sbx_/);
    expect(sandboxPids(sandbox.id)).toHaveLength(1);
    expect((await stack.call('POST', `/api/v1/sandboxes/${sandbox.id}/pause`)).body).toEqual({ success: true });
    const paused = (await getSandbox(stack, sandbox.id))!;
    expect(paused.status).toBe('PAUSED');
    expect(paused.session_api_key).toBeNull();
    expect(paused.exposed_urls).toBeNull();
    expect(sandboxPids(sandbox.id)).toEqual([]);
  });

  it('says in its record that images and the resource factor apply only on AWS, and runs the local program all the same', async () => {
    const key = await stack.newUser('image-user');
    const saved = await stack.call('POST', '/api/settings', {
      key,
      body: { sandbox_base_container_image: 'ubuntu:24.04', remote_runtime_resource_factor: 4 },
    });
    expect(saved.status).toBe(200);
    const sandbox = await startRunning(key);
    expect(sandbox.detail).toBe(
      'sandbox_base_container_image and remote_runtime_resource_factor apply only on AWS: this sandbox runs as a local process, without them',
    );
    // Settings without them: the next start says nothing.
    await stack.call('POST', '/api/settings', {
      key,
      body: { sandbox_base_container_image: null, remote_runtime_resource_factor: 1 },
    });
    await stack.call('POST', `/api/v1/sandboxes/${sandbox.id}/pause`, { key });
    await waitForSandboxStatus(stack, sandbox.id, 'PAUSED', key);
    expect((await stack.call('POST', `/api/v1/sandboxes/${sandbox.id}/resume`, { key })).status).toBe(200);
    expect((await waitForSandboxStatus(stack, sandbox.id, 'RUNNING', key)).detail).toBeNull();
  });

  it('gives the process only the environment it needs, none of the server', async () => {
    process.env.SERVER_ONLY_SECRET = 'do-not-leak';
    try {
      const sandbox = await startRunning();
      const [pid] = sandboxPids(sandbox.id);
      const env = processEnv(pid!)!;
      // Contained by bubblewrap: in its own pid namespace it watches a pipe, not the server's pid.
      expect(Object.keys(env).sort()).toEqual([
        'BRIDGE_URL',
        'ENROLLMENT_TOKEN',
        'HOME',
        'PATH',
        'SANDBOX_ID',
        'SANDBOX_PARENT_STDIN',
        'TMPDIR',
        'WORKSPACE_DIR',
      ]);
      expect(env.TMPDIR).toBe('/tmp');
      expect(env.BRIDGE_URL).toBe(stack.url);
      expect(env.WORKSPACE_DIR).toBe(workspace(sandbox.id));
      expect(env.HOME).toBe(join(stack.dataDir, 'sandboxes', sandbox.id, 'home'));
    } finally {
      delete process.env.SERVER_ONLY_SECRET;
    }
  });

  it('keeps the workspace across pause and resume, and removes it on delete', async () => {
    const sandbox = await startRunning();
    const before = await stack.sandboxKey(sandbox.id);
    writeFileSync(join(workspace(sandbox.id), 'notes.txt'), 'kept across a pause');
    await stack.call('POST', `/api/v1/sandboxes/${sandbox.id}/pause`);
    expect(sandboxPids(sandbox.id)).toEqual([]);
    expect((await stack.call('POST', `/api/v1/sandboxes/${sandbox.id}/resume`)).body).toEqual({ success: true });
    await waitForSandboxStatus(stack, sandbox.id, 'RUNNING');
    expect(await stack.sandboxKey(sandbox.id)).not.toBe(before);
    expect(readFileSync(join(workspace(sandbox.id), 'notes.txt'), 'utf8')).toBe('kept across a pause');
    expect(sandboxPids(sandbox.id)).toHaveLength(1);

    expect((await stack.call('DELETE', `/api/v1/sandboxes/${sandbox.id}`)).body).toEqual({ success: true });
    expect(sandboxPids(sandbox.id)).toEqual([]);
    expect(existsSync(join(stack.dataDir, 'sandboxes', sandbox.id))).toBe(false);
    expect(await getSandbox(stack, sandbox.id))!.toBeNull();
    for (const [method, path] of [
      ['DELETE', ''],
      ['POST', '/pause'],
      ['POST', '/resume'],
    ] as const) {
      const res = await stack.call(method, `/api/v1/sandboxes/${sandbox.id}${path}`);
      expect(res.status).toBe(404);
      expect(res.body).toEqual({ detail: 'Sandbox not found' });
    }
  });

  it('treats pausing a paused sandbox and resuming a running one as successful no-ops', async () => {
    const sandbox = await startRunning();
    const [pid] = sandboxPids(sandbox.id);
    expect((await stack.call('POST', `/api/v1/sandboxes/${sandbox.id}/resume`)).body).toEqual({ success: true });
    const still = (await getSandbox(stack, sandbox.id))!;
    expect(still.status).toBe('RUNNING');
    expect(still.updated_at).toBe(sandbox.updated_at);
    expect(sandboxPids(sandbox.id)).toEqual([pid]);
    await stack.call('POST', `/api/v1/sandboxes/${sandbox.id}/pause`);
    const paused = (await getSandbox(stack, sandbox.id))!;
    expect((await stack.call('POST', `/api/v1/sandboxes/${sandbox.id}/pause`)).body).toEqual({ success: true });
    expect((await getSandbox(stack, sandbox.id))!.updated_at).toBe(paused.updated_at);
  });

  it('turns a process that dies into ERROR with the reason, and can resume it', async () => {
    const sandbox = await startRunning();
    process.kill(sandboxPids(sandbox.id)[0]!, 'SIGKILL');
    const failed = await waitForSandboxStatus(stack, sandbox.id, 'ERROR');
    expect(failed.detail).toContain('killed by SIGKILL');
    expect(failed.session_api_key).toBeNull();
    await stack.call('POST', `/api/v1/sandboxes/${sandbox.id}/resume`);
    const back = await waitForSandboxStatus(stack, sandbox.id, 'RUNNING');
    expect(back.detail).toBeNull();
  });

  it('answers 404 for foreign ids and null for them in a batch get', async () => {
    const mine = await startRunning();
    const eve = await stack.newUser('eve-sbx');
    for (const [method, path] of [
      ['DELETE', ''],
      ['POST', '/pause'],
      ['POST', '/resume'],
    ] as const) {
      expect((await stack.call(method, `/api/v1/sandboxes/${mine.id}${path}`, { key: eve })).status).toBe(404);
    }
    const batch = await stack.call('GET', `/api/v1/sandboxes?id=${mine.id}&id=nope&id=${mine.id}`, { key: eve });
    expect(batch.body).toEqual([null, null, null]);
    const own = await stack.call('GET', `/api/v1/sandboxes?id=nope&id=${mine.id}&id=${mine.id}`);
    expect(own.body.map((s: any) => s?.id ?? null)).toEqual([null, mine.id, mine.id]);
    expect((await stack.call('GET', '/api/v1/sandboxes/search', { key: eve })).body).toEqual({
      items: [],
      next_page_id: null,
    });
    expect((await getSandbox(stack, mine.id))!.status).toBe('RUNNING');
  });

  it('pages the search newest first with a signed cursor', async () => {
    const key = await stack.newUser('pager');
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      const res = await stack.call('POST', '/api/v1/sandboxes', { key });
      ids.push(res.body.id);
      await stack.call('POST', `/api/v1/sandboxes/${res.body.id}/pause`, { key });
    }
    const first = await stack.call('GET', '/api/v1/sandboxes/search?limit=2', { key });
    expect(first.body.items.map((s: any) => s.id)).toEqual([ids[2], ids[1]]);
    expect(first.body.next_page_id).toEqual(expect.any(String));
    const second = await stack.call(
      'GET',
      `/api/v1/sandboxes/search?limit=2&page_id=${encodeURIComponent(first.body.next_page_id)}`,
      { key },
    );
    expect(second.body.items.map((s: any) => s.id)).toEqual([ids[0]]);
    const stolen = await stack.call(
      'GET',
      `/api/v1/sandboxes/search?page_id=${encodeURIComponent(first.body.next_page_id)}`,
    );
    expect(stolen.status).toBe(400);
    expect(stolen.body).toEqual({ detail: 'Invalid page_id' });
  });

  it('rejects bad input with a 4xx naming the field', async () => {
    const unknown = await stack.call('POST', '/api/v1/sandboxes?sandbox_spec_id=no-such-spec');
    expect(unknown.status).toBe(422);
    expect(unknown.body.detail[0]).toMatchObject({
      loc: ['query', 'sandbox_spec_id'],
      msg: 'Unknown sandbox spec "no-such-spec"',
    });
    const limit = await stack.call('GET', '/api/v1/sandboxes/search?limit=0');
    expect(limit.status).toBe(422);
    expect(limit.body.detail[0].loc).toEqual(['query', 'limit']);
    const tooMany = await stack.call(
      'GET',
      `/api/v1/sandboxes?${Array.from({ length: 101 }, (_, i) => `id=x${i}`).join('&')}`,
    );
    expect(tooMany.status).toBe(422);
    expect(tooMany.body.detail[0].loc).toEqual(['query', 'id']);
    expect((await stack.call('POST', '/api/v1/sandboxes', { key: null })).status).toBe(401);
  });
});

describe('the bridge', () => {
  it('accepts an enrollment token once, and only the session key afterwards', async () => {
    const sandbox = await startRunning();
    const token = processEnv(sandboxPids(sandbox.id)[0]!)!.ENROLLMENT_TOKEN!;
    expect(token).toMatch(/^enr_/);
    const again = await stack.call('POST', bridge(sandbox.id, 'check-in'), { key: token, body: {} });
    expect(again.status).toBe(401);
    expect(again.body).toEqual({ detail: 'Unauthorized' });
    for (const key of [null, 'sbx_wrong', token, stack.devKey]) {
      const res = await stack.call('POST', bridge(sandbox.id, 'heartbeat'), { key, body: {} });
      expect(res.status).toBe(401);
      expect(res.body).toEqual({ detail: 'Unauthorized' });
      expect((await stack.call('GET', bridge(sandbox.id, 'commands'), { key })).status).toBe(401);
    }
    const ok = await stack.call('POST', bridge(sandbox.id, 'heartbeat'), {
      key: (await stack.sandboxKey(sandbox.id))!,
      body: {},
    });
    expect(ok.body).toEqual({ status: 'RUNNING', command_seq: 0 });
    expect(
      await stack.services.sandboxBridge.authenticateSandbox(sandbox.id, (await stack.sandboxKey(sandbox.id))!),
    ).toMatchObject({ id: sandbox.id });
    expect(await stack.services.sandboxBridge.authenticateSandbox(sandbox.id, 'sbx_wrong')).toBeNull();
  });

  it('records agent activity only from an active heartbeat', async () => {
    const sandbox = await startRunning();
    const key = (await stack.sandboxKey(sandbox.id))!;
    await stack.call('POST', bridge(sandbox.id, 'heartbeat'), { key, body: { active: false } });
    expect((await getSandbox(stack, sandbox.id))!.last_activity_at).toBe(sandbox.last_activity_at);
    await new Promise((r) => setTimeout(r, 5));
    await stack.call('POST', bridge(sandbox.id, 'heartbeat'), { key, body: { active: true } });
    const after = (await getSandbox(stack, sandbox.id))!;
    expect(after.last_activity_at > sandbox.last_activity_at).toBe(true);
    expect(after.updated_at).toBe(sandbox.updated_at);
  });

  it('delivers queued commands in order with sealed payloads; the program acknowledges unknown ones and keeps running', async () => {
    const sandbox = await startRunning();
    const key = (await stack.sandboxKey(sandbox.id))!;
    const seq = await stack.services.sandboxes.enqueueCommand('dev', sandbox.id, {
      type: 'make_coffee',
      payload: { sugar: 2 },
    });
    expect(seq).toBe(1);
    // The program polls, gets it, logs it and acknowledges it: the queue empties.
    await waitFor('the command to be acknowledged', async () => {
      const res = await stack.call('GET', bridge(sandbox.id, 'commands'), { key });
      return res.body.commands.length === 0 ? true : undefined;
    });
    const log = readFileSync(join(stack.dataDir, 'sandboxes', sandbox.id, 'sandbox.log'), 'utf8');
    expect(log).toContain('Unknown command; acknowledged and ignored');
    expect(log).toContain('make_coffee');
    expect((await getSandbox(stack, sandbox.id))!.status).toBe('RUNNING');
    expect(sandboxPids(sandbox.id)).toHaveLength(1);

    // Straight at the store: payloads are sealed at rest, opened for the sandbox.
    await stack.sandboxRuntime.stop({ sandboxId: sandbox.id, generation: 1 });
    await stack.services.sandboxes.enqueueCommand('dev', sandbox.id, {
      type: 'send_message',
      payload: { text: 'secret-ish' },
    });
    await stack.services.sandboxes.enqueueCommand('dev', sandbox.id, {
      type: 'send_message',
      payload: { text: 'second' },
    });
    const polled = await stack.call('GET', bridge(sandbox.id, 'commands'), { key });
    expect(polled.body.commands.map((c: any) => [c.seq, c.type, c.payload])).toEqual([
      [2, 'send_message', { text: 'secret-ish' }],
      [3, 'send_message', { text: 'second' }],
    ]);
    expect((await stack.call('POST', bridge(sandbox.id, 'commands/2/ack'), { key })).body).toEqual({ success: true });
    expect((await stack.call('POST', bridge(sandbox.id, 'commands/2/ack'), { key })).body).toEqual({ success: true });
    const rest = await stack.call('GET', bridge(sandbox.id, 'commands'), { key });
    expect(rest.body.commands.map((c: any) => c.seq)).toEqual([3]);
    await expect(
      stack.services.sandboxes.enqueueCommand('eve', sandbox.id, { type: 'send_message' }),
    ).rejects.toMatchObject({ status: 404 });
  });

  it("answers a paused sandbox's poll with a stop command, which the program obeys", async () => {
    const sandbox = await startRunning();
    const key = (await stack.sandboxKey(sandbox.id))!;
    // Pause only the record, as if the stop had been lost: the program must stop itself.
    const rec = (await stack.services.sandboxes.batchGet('dev', [sandbox.id]))[0]!;
    expect(rec.status).toBe('RUNNING');
    const { DynamoSandboxStore } = await import('#shared/sandboxes/dynamo-sandbox-store.ts');
    const store = new DynamoSandboxStore();
    const stored = (await store.get(sandbox.id))!;
    await store.update(sandbox.id, stored.version, { status: 'PAUSED', liveShard: null, liveUserId: null });
    const res = await stack.call('GET', bridge(sandbox.id, 'commands'), { key });
    expect(res.body.commands).toEqual([
      expect.objectContaining({ seq: 0, type: 'stop', payload: { reason: 'the sandbox is PAUSED' } }),
    ]);
    await waitFor('the program to exit', () => (sandboxPids(sandbox.id).length === 0 ? true : undefined));
    expect((await getSandbox(stack, sandbox.id))!.status).toBe('PAUSED');
  });

  it('waits on a long-poll until a command arrives', async () => {
    const sandbox = await startRunning();
    await stack.sandboxRuntime.stop({ sandboxId: sandbox.id, generation: 1 });
    const poll = stack.call('GET', bridge(sandbox.id, 'commands?wait=10'), {
      key: (await stack.sandboxKey(sandbox.id))!,
    });
    await new Promise((r) => setTimeout(r, 300));
    await stack.services.sandboxes.enqueueCommand('dev', sandbox.id, { type: 'send_message', payload: 1 });
    const res = await poll;
    expect(res.body.commands.map((c: any) => c.type)).toEqual(['send_message']);
  });
});
