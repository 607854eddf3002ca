import { createHash, randomUUID } from 'node:crypto';
import { GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { documentClient, tableName } from '#shared/store/dynamo.ts';
import { apiCaller, startTestStack, type ApiCall, type TestStack } from '#test/helpers/stack.ts';
import { waitFor } from '#test/helpers/wait.ts';

/**
 * Idempotent creates over HTTP against the local stack (dynalite, real sandbox processes): the
 * Idempotency-Key convention of SAAS-CONTRACTS.md on the creates that declare `idempotent: true`.
 */
let stack: TestStack;
const callAs = async (user: string): Promise<ApiCall> => apiCaller(stack.url, await stack.newUser(user));
const withKey = (key: string) => ({ headers: { 'idempotency-key': key } });
const settings = { llm_model: 'openai/gpt-4o', llm_api_key: 'sk-test', llm_base_url: 'http://127.0.0.1:9/v1' };
const start = { initial_message: { content: [{ type: 'text', text: 'hello' }] } };

beforeAll(async () => {
  stack = await startTestStack();
});
afterAll(async () => {
  await stack?.stop();
});

describe('Idempotency-Key on creates', () => {
  it('answers a repeat with the first answer (status and body), marked as replayed, and creates one key', async () => {
    const call = await callAs('idem-keys');
    const key = randomUUID();
    const first = await call('POST', '/api/keys', { body: { name: 'ci' }, ...withKey(key) });
    expect(first.status).toBe(200);
    expect(first.headers.get('idempotent-replayed')).toBeNull();
    const again = await call('POST', '/api/keys', { body: { name: 'ci' }, ...withKey(key) });
    expect(again.status).toBe(first.status);
    expect(again.text).toBe(first.text);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.headers.get('x-request-id')).not.toBe(first.headers.get('x-request-id'));
    const keys = (await call('GET', '/api/keys')).body as { name: string }[];
    expect(keys.filter((k) => k.name === 'ci')).toHaveLength(1);
  });

  it('refuses the same key with another body: 422 naming the header, nothing created', async () => {
    const call = await callAs('idem-other-body');
    const key = randomUUID();
    expect((await call('POST', '/api/keys', { body: { name: 'one' }, ...withKey(key) })).status).toBe(200);
    const other = await call('POST', '/api/keys', { body: { name: 'two' }, ...withKey(key) });
    expect(other.status).toBe(422);
    expect(other.body.detail[0].loc).toEqual(['header', 'Idempotency-Key']);
    expect(other.body.detail[0].msg).toMatch(/different request body/);
    expect(((await call('GET', '/api/keys')).body as { name: string }[]).map((k) => k.name)).not.toContain('two');
  });

  it("scopes keys per user: another user's equal key and body creates their own record", async () => {
    const alice = await callAs('idem-alice');
    const mallory = await callAs('idem-mallory');
    const key = randomUUID();
    const a = await alice('POST', '/api/keys', { body: { name: 'shared' }, ...withKey(key) });
    const m = await mallory('POST', '/api/keys', { body: { name: 'shared' }, ...withKey(key) });
    expect(m.status).toBe(200);
    expect(m.headers.get('idempotent-replayed')).toBeNull();
    expect(m.body.id).not.toBe(a.body.id);
    expect(m.body.key).not.toBe(a.body.key);
    // ...and the same key on another route is another scope too.
    expect((await alice('POST', '/api/v1/sandboxes', { body: {}, ...withKey(key) })).status).toBe(200);
  });

  it('checks the header: 1 to 255 visible ASCII characters, else 422 naming it', async () => {
    const call = await callAs('idem-header');
    for (const bad of ['x'.repeat(256), 'has space', 'ü']) {
      const res = await call('POST', '/api/keys', { body: { name: 'k' }, headers: { 'idempotency-key': bad } });
      expect(res.status, bad).toBe(422);
      expect(res.body.detail[0].loc).toEqual(['header', 'Idempotency-Key']);
    }
    // Without the header nothing changes: two requests, two keys.
    await call('POST', '/api/keys', { body: { name: 'plain' } });
    await call('POST', '/api/keys', { body: { name: 'plain' } });
    expect(
      ((await call('GET', '/api/keys')).body as { name: string }[]).filter((k) => k.name === 'plain'),
    ).toHaveLength(2);
  });

  it('keeps no error answer: a create refused for want of settings runs again once they exist', async () => {
    const call = await callAs('idem-error');
    const key = randomUUID();
    expect((await call('POST', '/api/v1/app-conversations', { body: start, ...withKey(key) })).status).toBe(400);
    expect((await call('POST', '/api/settings', { body: settings })).status).toBe(200);
    const res = await call('POST', '/api/v1/app-conversations', { body: start, ...withKey(key) });
    expect(res.status).toBe(200);
    expect(res.headers.get('idempotent-replayed')).toBeNull();
  });

  it('an invitation repeated with one key is one invitation, its token the same and kept only sealed', async () => {
    const call = await callAs('idem-inviter');
    const orgId = (await call('GET', '/api/v1/users/me')).body.org_id;
    const key = randomUUID();
    const path = `/api/v1/orgs/${orgId}/invitations`;
    const first = await call('POST', path, { body: { email: 'twice@example.com' }, ...withKey(key) });
    expect(first.status, first.text).toBe(200);
    const again = await call('POST', path, { body: { email: 'twice@example.com' }, ...withKey(key) });
    expect(again.text).toBe(first.text);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    const listed = (await call('GET', path)).body as { email: string }[];
    expect(listed.filter((i) => i.email === 'twice@example.com')).toHaveLength(1);
    const hash = createHash('sha256')
      .update(JSON.stringify(['createInvitation', 'idem-inviter', key]))
      .digest('base64');
    const { Item: record } = await documentClient().send(
      new GetCommand({ TableName: tableName('idempotency'), Key: { id: `#${hash}` } }),
    );
    expect(Object.keys(record!.data)).toEqual(['sealed']);
    expect(JSON.stringify(record)).not.toContain(first.body.token);
  });

  it('keeps a new API key only sealed, and forgets a key after 24 hours (Powertools treats an expired record as absent: dynalite has no TTL)', async () => {
    const call = await callAs('idem-expiry');
    const key = randomUUID();
    const first = await call('POST', '/api/keys', { body: { name: 'old' }, ...withKey(key) });
    // The record's id: Powertools' hash of (route, user, key), with no function-name prefix locally.
    const hash = createHash('sha256')
      .update(JSON.stringify(['createKey', 'idem-expiry', key]))
      .digest('base64');
    const { Item: record } = await documentClient().send(
      new GetCommand({ TableName: tableName('idempotency'), Key: { id: `#${hash}` } }),
    );
    expect(record?.status).toBe('COMPLETED');
    expect(Object.keys(record!.data)).toEqual(['sealed']);
    expect(JSON.stringify(record)).not.toContain(first.body.key);
    const kept = Number(record!.expiration) - Date.now() / 1000;
    expect(kept).toBeGreaterThan(24 * 3600 - 60);
    expect(kept).toBeLessThanOrEqual(24 * 3600 + 1);
    expect((await call('POST', '/api/keys', { body: { name: 'old' }, ...withKey(key) })).text).toBe(first.text);
    await documentClient().send(
      new UpdateCommand({
        TableName: tableName('idempotency'),
        Key: { id: record!.id },
        UpdateExpression: 'SET expiration = :past',
        ExpressionAttributeValues: { ':past': Math.floor(Date.now() / 1000) - 1 },
      }),
    );
    const later = await call('POST', '/api/keys', { body: { name: 'old' }, ...withKey(key) });
    expect(later.status).toBe(200);
    expect(later.headers.get('idempotent-replayed')).toBeNull();
    expect(later.body.id).not.toBe(first.body.id);
  });
});

describe('10 racing repeats with one key', () => {
  /** Sends 10 at once, then repeats until none is in progress: every answer is the first one. */
  async function race(call: ApiCall, path: string, body: unknown) {
    const key = randomUUID();
    const answers = await Promise.all(Array.from({ length: 10 }, () => call('POST', path, { body, ...withKey(key) })));
    const done = answers.filter((a) => a.status === 200);
    const busy = answers.filter((a) => a.status === 409);
    expect(done.length + busy.length, JSON.stringify(answers.map((a) => a.status))).toBe(10);
    expect(done.filter((a) => a.headers.get('idempotent-replayed') === null)).toHaveLength(1);
    for (const a of busy) {
      expect(a.headers.get('retry-after')).toBe('1');
      expect(a.body.detail).toMatch(/still in progress/);
    }
    const first = done.find((a) => a.headers.get('idempotent-replayed') === null)!;
    for (const a of done) expect(a.text).toBe(first.text);
    const settled = await waitFor('the first answer to be kept', async () => {
      const res = await call('POST', path, { body, ...withKey(key) });
      return res.status === 200 ? res : undefined;
    });
    expect(settled.text).toBe(first.text);
    return first.body;
  }

  it('POST /api/v1/sandboxes: one sandbox', async () => {
    const call = await callAs('idem-race-sandbox');
    const sandbox = await race(call, '/api/v1/sandboxes', {});
    const { body } = await call('GET', '/api/v1/sandboxes/search');
    expect(body.items.map((s: { id: string }) => s.id)).toEqual([sandbox.id]);
    expect((await stack.sandboxRuntime.list()).filter((i) => i.sandboxId === sandbox.id)).toHaveLength(1);
  });

  it('POST /api/v1/app-conversations: one conversation, one sandbox', async () => {
    const call = await callAs('idem-race-v1');
    await call('POST', '/api/settings', { body: settings });
    await race(call, '/api/v1/app-conversations', start);
    expect((await call('GET', '/api/v1/app-conversations/count')).body).toBe(1);
    expect((await call('GET', '/api/v1/app-conversations/start-tasks/search')).body.items).toHaveLength(1);
    const sandboxes = await waitFor('its sandbox', async () => {
      const { body } = await call('GET', '/api/v1/sandboxes/search');
      return body.items.length ? body.items : undefined;
    });
    expect(sandboxes).toHaveLength(1);
  });

  it('POST /api/conversations (legacy): one conversation', async () => {
    const call = await callAs('idem-race-legacy');
    await call('POST', '/api/settings', { body: settings });
    const created = await race(call, '/api/conversations', { initial_user_msg: 'hello' });
    expect(created.conversation_id).toBeTruthy();
    expect((await call('GET', '/api/v1/app-conversations/count')).body).toBe(1);
  });

  it('POST /api/keys: one key', async () => {
    const call = await callAs('idem-race-keys');
    await race(call, '/api/keys', { name: 'raced' });
    expect(
      ((await call('GET', '/api/keys')).body as { name: string }[]).filter((k) => k.name === 'raced'),
    ).toHaveLength(1);
  });
});
