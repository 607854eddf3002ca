import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import {
  createServer,
  request as httpRequest,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fetchWithKey } from '#sandbox/agent/llm-credential.ts';
import { protocolPaths } from '#shared/protocol.ts';
import { createKey, until } from '#test/tier/flows.ts';
import { startTier, type TierStack } from '#test/tier/stack.ts';
import { ofType, type Template, withoutAction } from '#test/tier/template.ts';

/**
 * The LLM gateway as synthesized (design (a), docs/platform-llms.md): its bundle from cdk.out with the
 * template's environment and IAM, behind the emulated function URL in RESPONSE_STREAM mode (the
 * runtime's `awslambda.streamifyResponse` framing emulated in test/tier/lambda-runner.mjs), behind
 * CloudFront `/llm/*` with origin access control (the request signed as the distribution, Lambda's
 * checks of the signature, of `x-amz-content-sha256` and of both invoke permissions with the
 * distribution's SourceArn: test/tier/function-url.ts). The platform key is an SSM SecureString read by
 * its ARN. `npm run synth` synthesizes with the models of test/fixtures/platform-llms/tier.json.
 * The mutations: without the key's read permission, and without each invoke permission.
 */

const KEY = 'sk-ant-tier-platform-5e1f0c9a7b3d2e4f6a8b';
const SYNTH = 'the platformLlms context of test/fixtures/platform-llms/tier.json (as scripts/test.sh does)';
const models = JSON.parse(readFileSync(new URL('../fixtures/platform-llms/tier.json', import.meta.url), 'utf8')) as {
  model: string;
  base_url: string;
  api_key_arn: string;
}[];
const MODEL = models[0]!;
const UPSTREAM_ORIGIN = new URL(MODEL.base_url).origin;

/** An Anthropic upstream on loopback: refuses any key but the platform's; `hold` keeps a stream open after its first event. */
interface Upstream {
  url: string;
  requests: { headers: IncomingMessage['headers']; body: any }[];
  hold?: Promise<void>;
  close(): Promise<void>;
}

async function startUpstream(): Promise<Upstream> {
  const up: Upstream = { url: '', requests: [], close: async () => {} };
  const server: Server = createServer(async (req, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const body = JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}');
    up.requests.push({ headers: req.headers, body });
    if (req.url !== '/v1/messages' || req.headers['x-api-key'] !== KEY) {
      res.writeHead(401, { 'content-type': 'application/json' });
      return res.end(JSON.stringify({ type: 'error', error: { type: 'authentication_error', message: 'bad key' } }));
    }
    const usage = { input_tokens: 40, output_tokens: 12 };
    if (!body.stream) {
      res.writeHead(200, { 'content-type': 'application/json' });
      return res.end(
        JSON.stringify({
          id: 'msg_tier',
          type: 'message',
          role: 'assistant',
          model: body.model,
          content: [{ type: 'text', text: 'hello from upstream' }],
          stop_reason: 'end_turn',
          usage,
        }),
      );
    }
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    const ev = (type: string, data: object) =>
      res.write(`event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`);
    ev('message_start', { message: { id: 'msg_tier', type: 'message', role: 'assistant', content: [], usage } });
    ev('content_block_delta', { index: 0, delta: { type: 'text_delta', text: 'first' } });
    await up.hold;
    ev('message_delta', { delta: { stop_reason: 'end_turn' }, usage: { output_tokens: 12 } });
    ev('message_stop', {});
    res.end();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  up.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  up.close = () =>
    new Promise((r) => {
      server.closeAllConnections();
      server.close(() => r());
    });
  return up;
}

/** A user on the platform model with a conversation READY in its sandbox; the start configuration as the sandbox reads it. */
async function platformConversation(tier: TierStack, user: string, budgetUsd: number) {
  const key = await createKey(tier, user);
  const saved = await tier.call('POST', '/api/settings', {
    key,
    body: { llm_model: MODEL.model, max_budget_per_task: budgetUsd },
  });
  expect(saved.status, saved.text).toBe(200);
  const task = await tier.call('POST', '/api/v1/app-conversations', { key, body: {} });
  expect(task.status, task.text).toBe(200);
  const ready = await until(
    tier,
    'start task',
    async () => (await tier.call('GET', `/api/v1/app-conversations/start-tasks?ids=${task.body.id}`, { key })).body[0],
    (t) => t?.status === 'READY' || t?.status === 'ERROR',
    90_000,
  );
  expect(ready.status, JSON.stringify(ready)).toBe('READY');
  const path = protocolPaths.startConfig
    .replace('{sandbox_id}', ready.sandbox_id)
    .replace('{conversation_id}', ready.app_conversation_id);
  const config = await tier.call('GET', path, { key: (await tier.sandboxKey(ready.sandbox_id))! });
  expect(config.status, config.text).toBe(200);
  return { key, config: config.body };
}

/** The agent's own fetch (its credential in X-Session-API-Key and x-api-key, the body's SHA-256), through CloudFront. */
const agentFetch = (tier: TierStack, credential: string) => {
  const f = fetchWithKey(async () => credential);
  return (body: object) =>
    f(`${tier.front.url}/llm/v1/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': credential, 'anthropic-version': '2023-06-01' },
      body: JSON.stringify(body),
    });
};

const ask = (over: object = {}) => ({
  model: MODEL.model,
  max_tokens: 10,
  messages: [{ role: 'user', content: 'hi' }],
  ...over,
});

describe('the LLM gateway as deployed: function URL (response streaming) behind CloudFront with OAC', () => {
  let tier: TierStack;
  let upstream: Upstream;
  let conversation: Awaited<ReturnType<typeof platformConversation>>;
  beforeAll(async () => {
    upstream = await startUpstream();
    tier = await startTier({ outside: [[UPSTREAM_ORIGIN, upstream.url]] });
    if (!tier.functionUrls.urls.length) throw new Error(`cdk.out has no LLM gateway: synthesize with ${SYNTH}`);
    tier.aws.keyValues.set(MODEL.api_key_arn, KEY);
    // 0.01 USD: a call capped at 10 output tokens fits, one of 1,000 (18,000 micro-USD at most) does not.
    conversation = await platformConversation(tier, 'llm-tier', 0.01);
  }, 180_000);
  afterAll(async () => {
    await tier?.stop();
    await upstream?.close();
  });

  it('forwards a plain call with the key read from SSM by its ARN, never the credential, and meters it', async () => {
    const { config, key } = conversation;
    expect(config.llm).toEqual(
      expect.objectContaining({ model: MODEL.model, api: 'anthropic', api_key: expect.stringMatching(/^acsl\./) }),
    );
    expect(config.llm.base_url).toBe(`https://${tier.front.domainName}/llm/v1`);
    expect(JSON.stringify(config)).not.toContain(KEY);
    const res = await agentFetch(tier, config.llm.api_key)(ask());
    const text = await res.text();
    expect(res.status, `${text}\n${tier.explain()}`).toBe(200);
    expect(JSON.parse(text).content[0].text).toBe('hello from upstream');
    const sent = upstream.requests.at(-1)!;
    expect(sent.headers['x-api-key']).toBe(KEY);
    expect(sent.body.model).toBe('claude-tier');
    expect(JSON.stringify(sent)).not.toContain(config.llm.api_key);
    // Read under the gateway's own role, by ARN; no call of any function was denied.
    expect(tier.aws.calls).toContainEqual(expect.objectContaining({ operation: 'ssm:GetParameter', allowed: true }));
    expect(tier.aws.denials).toEqual([]);
    const usage = await until(
      tier,
      'usage',
      async () => (await tier.call('GET', '/api/v1/usage', { key })).body,
      (u) => u?.items?.some((d: any) => d.llm_calls >= 1),
      10_000,
    );
    expect(usage.items.find((d: any) => d.llm_calls >= 1)).toEqual(
      expect.objectContaining({ llm_input_tokens: 40, llm_output_tokens: 12 }),
    );
  }, 60_000);

  it('streams: the first event reaches the client while the upstream still holds the rest', async () => {
    let release!: () => void;
    upstream.hold = new Promise<void>((r) => (release = r));
    const res = await agentFetch(tier, conversation.config.llm.api_key)(ask({ stream: true }));
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toContain('text/event-stream');
    const reader = res.body!.getReader();
    let seen = '';
    while (!seen.includes('first')) seen += new TextDecoder().decode((await reader.read()).value);
    release();
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      seen += new TextDecoder().decode(value);
    }
    expect(seen).toContain('message_stop');
    upstream.hold = undefined;
  }, 60_000);

  it('answers a repeated Idempotency-Key with the first answer, sealed at rest with KMS under its own role, forwarding nothing', async () => {
    const credential = conversation.config.llm.api_key;
    const post = (idem: string) =>
      fetchWithKey(async () => credential)(`${tier.front.url}/llm/v1/messages`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'x-api-key': credential,
          'anthropic-version': '2023-06-01',
          'idempotency-key': idem,
        },
        body: JSON.stringify(ask({ max_tokens: 5 })),
      });
    const kms = (operation: string) => tier.aws.calls.filter((c) => c.operation === operation && c.allowed).length;
    const sealed = kms('kms:Encrypt');
    const first = await post('tier-idem-1');
    const text = await first.text();
    expect(first.status, `${text}\n${tier.explain()}`).toBe(200);
    // The answer's own key sealed by KMS under the gateway's role before the answer ended.
    expect(kms('kms:Encrypt')).toBeGreaterThan(sealed);
    const calls = upstream.requests.length;
    const opened = kms('kms:Decrypt');
    const again = await post('tier-idem-1');
    expect(again.status).toBe(200);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(await again.text()).toBe(text);
    expect(kms('kms:Decrypt')).toBeGreaterThan(opened);
    expect(upstream.requests.length).toBe(calls);
    expect(tier.aws.denials).toEqual([]);
  }, 60_000);

  it("refuses over the conversation's budget with 402 in Anthropic's shape, forwarding nothing", async () => {
    const calls = upstream.requests.length;
    const res = await agentFetch(tier, conversation.config.llm.api_key)(ask({ max_tokens: 1000 }));
    expect(res.status).toBe(402);
    expect(await res.json()).toEqual({
      type: 'error',
      error: expect.objectContaining({ type: 'budget_exceeded', code: 'max_budget_per_task' }),
    });
    expect(upstream.requests.length).toBe(calls);
  }, 60_000);

  it("is refused by Lambda before the function runs without the body's SHA-256, with a wrong one, or with a request altered after signing", async () => {
    const credential = conversation.config.llm.api_key;
    const body = JSON.stringify(ask());
    const post = (headers: Record<string, string>) =>
      fetch(`${tier.front.url}/llm/v1/messages`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-session-api-key': credential, ...headers },
        body,
      });
    const before = tier.functionUrls.records.length;
    const calls = upstream.requests.length;
    expect((await post({})).status).toBe(403);
    expect((await post({ 'x-amz-content-sha256': createHash('sha256').update('other').digest('hex') })).status).toBe(
      403,
    );
    const refused = tier.functionUrls.records.slice(before);
    expect(refused.map((r) => r.refused)).toEqual([
      expect.stringMatching(/signature we calculated does not match/),
      expect.stringMatching(/signature we calculated does not match/),
    ]);
    expect(upstream.requests.length).toBe(calls);
    // Straight to the function URL, skipping CloudFront (its own Host; fetch cannot set one): no signature, refused.
    const url = tier.functionUrls.urls[0]!;
    const direct = await new Promise<number>((resolve, reject) => {
      const out = httpRequest(
        `${tier.functionUrls.url}/llm/v1/messages`,
        {
          method: 'POST',
          headers: { host: url.domain, 'content-type': 'application/json', 'x-session-api-key': credential },
        },
        (r) => {
          r.resume();
          resolve(r.statusCode ?? 0);
        },
      );
      out.on('error', reject);
      out.end(body);
    });
    expect(direct).toBe(403);
    expect(tier.functionUrls.records.at(-1)).toEqual({
      domain: url.domain,
      status: 403,
      refused: 'Missing Authentication Token',
    });
    expect(upstream.requests.length).toBe(calls);
  }, 60_000);
});

/** Removes the CloudFront invoke permission for `action` from the template (the function URL's resource policy). */
const withoutInvoke = (t: Template, action: string) => {
  const perms = ofType(t, 'AWS::Lambda::Permission').filter(
    ([, r]) => r.Properties.Principal === 'cloudfront.amazonaws.com' && r.Properties.Action === action,
  );
  expect(perms).toHaveLength(1);
  for (const [id] of perms) delete t.Resources[id];
};

describe.each([['lambda:InvokeFunctionUrl'], ['lambda:InvokeFunction']])(
  'mutation: the distribution loses %s on the gateway',
  (action) => {
    let tier: TierStack;
    beforeAll(async () => {
      tier = await startTier({ mutate: (t) => withoutInvoke(t, action) });
    }, 120_000);
    afterAll(() => tier?.stop());

    it('every call through CloudFront is refused by Lambda (403) before the function runs', async () => {
      const res = await fetchWithKey(async () => 'acsl.any')(`${tier.front.url}/llm/v1/messages`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(ask()),
      });
      expect(res.status).toBe(403);
      expect(tier.functionUrls.records.at(-1)!.refused).toContain(`no ${action} for cloudfront.amazonaws.com`);
      expect(tier.lambda.logsOf(tier.functionUrls.urls[0]!.functionArn)).toBe('');
    }, 30_000);
  },
);

describe('mutation: the gateway may not read the platform key', () => {
  let tier: TierStack;
  let upstream: Upstream;
  beforeAll(async () => {
    upstream = await startUpstream();
    tier = await startTier({
      outside: [[UPSTREAM_ORIGIN, upstream.url]],
      mutate: (t) => expect(withoutAction(t, 'ssm:GetParameter')).toBeGreaterThan(0),
    });
    tier.aws.keyValues.set(MODEL.api_key_arn, KEY);
  }, 120_000);
  afterAll(async () => {
    await tier?.stop();
    await upstream?.close();
  });

  it('a call is 503 "not available" (the key never shown), SSM denied the read, nothing forwarded or charged', async () => {
    const { config } = await platformConversation(tier, 'llm-no-key', 1);
    const res = await agentFetch(tier, config.llm.api_key)(ask());
    expect(res.status).toBe(503);
    expect(await res.json()).toEqual({
      type: 'error',
      error: expect.objectContaining({ type: 'api_error', message: 'The model is not available now' }),
    });
    expect(tier.aws.denials.map((d) => [d.request.action, d.request.resource])).toContainEqual([
      'ssm:GetParameter',
      MODEL.api_key_arn,
    ]);
    expect(upstream.requests).toEqual([]);
  }, 120_000);
});
