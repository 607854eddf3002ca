import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  CLOUD_BACKEND,
  driveCanvas,
  failedCanvasCalls,
  reserveCanvasOrigin,
  startAgentCanvas,
  loadInNewTab,
  type AgentCanvas,
  type CanvasSession,
} from '#test/helpers/agent-canvas.ts';
import { CHROMIUM, launchBrowser, type Browser } from '#test/helpers/browser.ts';
import { startHttpsHosts, type HttpsHosts } from '#test/helpers/https-hosts.ts';
import { reply, startScriptedLlm, type ScriptedLlm } from '#test/helpers/scripted-llm.ts';
import { createKey, sandboxOf, settingsRoundTrip, startConversationV1, until } from '#test/tier/flows.ts';
import { startTier, type TierStack } from '#test/tier/stack.ts';
import { connectStream, type StreamMessage } from '#test/helpers/stream-client.ts';
import { ofType, withoutAction } from '#test/tier/template.ts';
import { WEBSOCKET_LIMITS } from '#test/tier/websocket-api.ts';

/**
 * The event stream on the synthesized stack: CloudFront's `/sockets/*` behaviour and its function,
 * the WebSocket API's `$connect` / `$disconnect` / `$default`, the connection table, the resend
 * function invoked asynchronously, and PostToConnection from the real events bridge bundle, each call
 * checked against the caller's role.
 */

interface Conversation {
  id: string;
  sandboxId: string;
  scoped: string;
  sandboxKey: string;
  /** Events stored so far (the agent's). */
  stored: number;
}

const event = (n: number, extra: Record<string, unknown> = {}) => ({
  kind: 'MessageEvent',
  id: `tier-live-${n}-${Math.random().toString(36).slice(2, 8)}`,
  timestamp: new Date().toISOString(),
  source: 'agent',
  llm_message: { role: 'assistant', content: [{ type: 'text', text: `live ${n}` }] },
  ...extra,
});

async function conversationOn(tier: TierStack, llm: ScriptedLlm, key: string): Promise<Conversation> {
  await settingsRoundTrip(tier, key, llm.baseUrl);
  llm.enqueue(reply.finish('streamed'));
  const { conversationId, events } = await startConversationV1(tier, key, 'hello stream');
  const [c] = (await tier.call('GET', `/api/v1/app-conversations?ids=${conversationId}`, { key })).body;
  const sandboxKey = await tier.sandboxKey(c.sandbox_id);
  return {
    id: conversationId,
    sandboxId: c.sandbox_id,
    scoped: c.session_api_key,
    sandboxKey: sandboxKey!,
    stored: events.length,
  };
}

/** Posts events numbered from `first` through the real events bridge bundle, as the sandbox does. */
async function ingest(tier: TierStack, c: Conversation, first: number, events: unknown[]) {
  const res = await tier.call('POST', `/api/v1/webhooks/${c.sandboxId}/events/${c.id}?first_seq=${first}`, {
    key: c.sandboxKey,
    body: events,
  });
  expect(res.status, res.text).toBe(200);
}

const seqs = (messages: StreamMessage[]) => messages.map((m) => m.seq);
const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i);

describe('the event stream on the synthesized stack', () => {
  let tier: TierStack;
  let llm: ScriptedLlm;
  let key: string;
  let conv: Conversation;
  /** The stream's URL on the one public host (CloudFront). */
  const streamUrl = (id: string, query: string) =>
    `${tier.front.url.replace(/^http/, 'ws')}/sockets/events/${id}?${query}`;

  beforeAll(async () => {
    [tier, llm] = await Promise.all([startTier(), startScriptedLlm()]);
    key = await createKey(tier, 'streamer');
    conv = await conversationOn(tier, llm, key);
  }, 240_000);
  afterAll(async () => {
    await tier?.stop();
    await llm?.close();
  });

  it('conversation_url and the links follow the one public host (CloudFront)', async () => {
    const [c] = (await tier.call('GET', `/api/v1/app-conversations?ids=${conv.id}`, { key })).body;
    expect(c.conversation_url).toMatch(new RegExp(`^https://${tier.front.domainName}/`));
    // The HTTP API works through the front as well.
    const me = await fetch(`${tier.front.url}/api/v1/users/me`, { headers: { 'x-session-api-key': key } });
    expect(me.status).toBe(200);
  });

  it('a user message sent on the socket is relayed to the agent (as POST .../events); a malformed one is answered with the reason', async () => {
    const client = await connectStream(streamUrl(conv.id, `session_api_key=${conv.scoped}`));
    await tier.aws.settle();
    client.ws.send('not json');
    const [answer] = await client.untilFrames(1);
    expect(answer).toEqual({ error: { code: 1007, reason: expect.stringContaining('JSON') } });
    llm.enqueue(reply.finish('relayed and done'));
    client.ws.send(JSON.stringify({ role: 'user', content: [{ type: 'text', text: 'one more thing' }], run: true }));
    const done = await until(
      tier,
      'the agent answered the relayed message',
      async () => [...client.messages],
      (ms) => ms.some((m) => JSON.stringify(m).includes('relayed and done')),
      90_000,
    );
    expect(done.some((m) => m.source === 'user' && JSON.stringify(m).includes('one more thing'))).toBe(true);
    const got = seqs(done);
    expect(got).toEqual(range(got[0]!, got[0]! + got.length - 1));
    // The agent's run is over: what is stored now is where the tests below go on.
    await until(
      tier,
      'finished again',
      async () =>
        (await tier.call('GET', `/api/v1/app-conversations?ids=${conv.id}`, { key })).body[0]?.execution_status,
      (st) => st === 'finished',
      60_000,
    );
    conv.stored = (await tier.call('GET', `/api/v1/events/count?conversation_id__eq=${conv.id}`, { key })).body;
    await client.close();
  }, 120_000);

  it('resend_all with the scoped key: every stored event in order, then concurrent ingests arrive exactly once, in order', async () => {
    const client = await connectStream(streamUrl(conv.id, `resend_all=true&session_api_key=${conv.scoped}`));
    expect(client.refused).toBeUndefined();
    await client.until(conv.stored);
    expect(seqs(client.messages)).toEqual(range(1, conv.stored));
    // Six batches posted at once, out of order: each ingest function pushes what is committed.
    const base = conv.stored;
    const batches = [0, 1, 2, 3, 4, 5].map((b) => ({
      first: base + 1 + b * 3,
      events: [event(b * 3 + 1), event(b * 3 + 2), event(b * 3 + 3)],
    }));
    await Promise.all(
      [batches[3]!, batches[0]!, batches[5]!, batches[1]!, batches[4]!, batches[2]!].map((b) =>
        ingest(tier, conv, b.first, b.events),
      ),
    );
    conv.stored += 18;
    await client.until(conv.stored);
    await new Promise((r) => setTimeout(r, 300)); // nothing more may follow
    expect(seqs(client.messages)).toEqual(range(1, conv.stored));
    expect(client.messages.at(-1)!.llm_message.content[0].text).toBe('live 18');
    await client.close();
    await tier.aws.settle();
    expect(tier.aws.denials).toEqual([]);
    expect(tier.aws.asyncInvocations.filter((i) => !i.result.ok)).toEqual([]);
    expect(tier.sockets.faults).toEqual([]);
  }, 90_000);

  it('reconnect with after_seq: only what came after, no gap, no duplicate; without resend_all only new events', async () => {
    const resumed = await connectStream(
      streamUrl(conv.id, `after_seq=${conv.stored - 2}&session_api_key=${conv.scoped}`),
    );
    await resumed.until(conv.stored);
    const fresh = await connectStream(streamUrl(conv.id, `session_api_key=${conv.scoped}`));
    await tier.aws.settle(); // both resend steps ran
    await ingest(tier, conv, conv.stored + 1, [event(100)]);
    conv.stored += 1;
    await resumed.until(conv.stored);
    await fresh.until(conv.stored);
    expect(seqs(resumed.messages)).toEqual([conv.stored - 2, conv.stored - 1, conv.stored]);
    expect(seqs(fresh.messages)).toEqual([conv.stored]);
    await Promise.all([resumed.close(), fresh.close()]);
  }, 60_000);

  it('a large event goes out as a reference whose href returns it; every frame within 32 KB', async () => {
    const client = await connectStream(streamUrl(conv.id, `session_api_key=${conv.scoped}`));
    await tier.aws.settle();
    const big = event(200, { extras: 'x'.repeat(100_000) });
    await ingest(tier, conv, conv.stored + 1, [big]);
    conv.stored += 1;
    await client.until(conv.stored);
    const [ref] = client.messages;
    expect(ref).toMatchObject({ kind: 'EventReference', id: big.id, seq: conv.stored, event_kind: 'MessageEvent' });
    expect(ref!.bytes).toBeGreaterThan(100_000);
    const fetched = await fetch(`${tier.front.url}${ref!.href}`, { headers: { 'x-session-api-key': conv.scoped } });
    expect(fetched.status).toBe(200);
    expect(((await fetched.json()) as any).items[0].id).toBe(big.id);
    // API Gateway's own limits, as the emulation applies them: a 100 KB message goes out in 32 KB
    // frames, one over 128 KB is refused (413), and so is a client message over 128 KB (1009).
    const [connection] = [...tier.sockets.connections.values()].filter((c) => c.open);
    const before = connection!.frameSizes.length;
    expect((await tier.sockets.manage('POST', connection!.id, Buffer.from('y'.repeat(100_000)))).status).toBe(200);
    expect(connection!.frameSizes.slice(before)).toEqual([32_768, 32_768, 32_768, 1_696]);
    expect((await client.untilFrames(2))[1]).toBe('y'.repeat(100_000));
    expect(
      (await tier.sockets.manage('POST', connection!.id, Buffer.alloc(WEBSOCKET_LIMITS.messageBytes + 1))).status,
    ).toBe(413);
    client.ws.send('z'.repeat(WEBSOCKET_LIMITS.messageBytes + 1));
    expect((await client.closed).code).toBe(1009);
  }, 60_000);

  it("a session cookie opens the stream from the service's own origin, never cross-site; a ticket opens it once", async () => {
    const signIn = await tier.call('POST', '/api/authenticate', { key });
    const cookie = signIn.headers.get('set-cookie')!.split(';')[0]!;
    const own = await connectStream(streamUrl(conv.id, 'resend_all=true'), {
      headers: { cookie, origin: `https://${tier.front.domainName}` },
    });
    expect(own.refused).toBeUndefined();
    await own.until(conv.stored);
    await own.close();
    const evil = await connectStream(streamUrl(conv.id, 'resend_all=true'), {
      headers: { cookie, origin: 'https://evil.example' },
    });
    expect(evil.refused).toBe(403);

    const issued = await tier.call('POST', `/api/v1/app-conversations/${conv.id}/stream-tickets`, { key });
    expect(issued.status, issued.text).toBe(200);
    const ticket = issued.body.ticket;
    const first = await connectStream(streamUrl(conv.id, `ticket=${ticket}&after_seq=${conv.stored - 1}`));
    await first.until(conv.stored);
    expect(seqs(first.messages)).toEqual([conv.stored]);
    await first.close();
    expect((await connectStream(streamUrl(conv.id, `ticket=${ticket}`))).refused).toBe(401);
  }, 60_000);

  it("$connect answers 429 past the plan's sockets per conversation (counted in the table), and a closed one frees its slot", async () => {
    // The built-in plan: 5 per conversation. Opened one after the other, so each is recorded before the next counts.
    const open = [];
    for (let i = 0; i < 5; i++) {
      const c = await connectStream(streamUrl(conv.id, `session_api_key=${conv.scoped}`));
      expect(c.refused, `socket ${i + 1}`).toBeUndefined();
      open.push(c);
    }
    expect((await connectStream(streamUrl(conv.id, `session_api_key=${conv.scoped}`))).refused).toBe(429);
    await open.pop()!.close();
    await until(
      tier,
      'a freed slot',
      async () => {
        const again = await connectStream(streamUrl(conv.id, `session_api_key=${conv.scoped}`));
        if (again.refused === undefined) open.push(again);
        return again.refused === undefined;
      },
      (ok) => ok,
      20_000,
    );
    for (const c of open) await c.close();
  }, 60_000);

  it('first-message auth: a connection without credentials opens pending; its auth frame opens the stream (resend_mode=all, since); a wrong, late or missing frame drops it', async () => {
    const n = (await tier.call('GET', `/api/v1/events/count?conversation_id__eq=${conv.id}`, { key })).body as number;
    const auth = (k: string) => JSON.stringify({ type: 'auth', session_api_key: k });
    const ok = await connectStream(streamUrl(conv.id, 'resend_mode=all'));
    expect(ok.refused).toBeUndefined();
    ok.ws.send(auth(conv.scoped));
    await ok.until(n);
    expect(seqs(ok.messages)).toEqual(range(1, n));
    await ok.close();
    // since the timestamp of the second-to-last event: only the last one.
    const all = (await tier.call('GET', `/api/v1/events/search?conversation_id__eq=${conv.id}&limit=100`, { key })).body
      .items;
    const since = await connectStream(
      streamUrl(conv.id, `resend_mode=since&after_timestamp=${encodeURIComponent(all[n - 2].timestamp)}`),
    );
    since.ws.send(auth(conv.scoped));
    await since.until(n);
    expect(since.messages.map((m) => m.id)).toEqual(
      all.filter((e: any) => e.timestamp > all[n - 2].timestamp).map((e: any) => e.id),
    );
    await since.close();
    // A wrong key: API Gateway drops the connection (a plain close, no code of ours), nothing sent.
    const wrong = await connectStream(streamUrl(conv.id, 'resend_mode=all'));
    wrong.ws.send(auth('acsc.not-a-key'));
    await wrong.closed;
    expect(wrong.frames).toEqual([]);
    // Past the 10 s deadline: the late frame is refused by the message function, the silent one by the sweeper.
    const late = await connectStream(streamUrl(conv.id, 'resend_mode=all'));
    const silent = await connectStream(streamUrl(conv.id, 'resend_mode=all'));
    await new Promise((r) => setTimeout(r, 10_500));
    late.ws.send(auth(conv.scoped));
    await late.closed;
    expect(late.frames).toEqual([]);
    const run = await tier.bus.runSchedule('SweeperSchedule');
    expect(run.result.error).toBeUndefined();
    await silent.closed;
    expect(silent.frames).toEqual([]);
    await tier.aws.settle();
    expect(tier.aws.denials).toEqual([]);
  }, 60_000);

  it("refuses a user key in the URL, another conversation's key, no credentials, and paths the API has not", async () => {
    expect((await connectStream(streamUrl(conv.id, `session_api_key=${key}`))).refused).toBe(403);
    expect((await connectStream(streamUrl(conv.id, `resend_all=true&foo=${key}`))).refused).toBe(403);
    // No credentials at all is first-message auth now (its own test below); a malformed id still refuses at once.
    expect((await connectStream(streamUrl('not-an-id', 'resend_mode=all'))).refused).toBe(400);
    const other = await createKey(tier, 'other-streamer');
    const mine = await conversationOn(tier, llm, other);
    expect((await connectStream(streamUrl(conv.id, `session_api_key=${mine.scoped}`))).refused).toBe(403);
    // Another user's conversation with my own credentials: not found, as on HTTP.
    const signIn = await tier.call('POST', '/api/authenticate', { key: other });
    const cookie = signIn.headers.get('set-cookie')!.split(';')[0]!;
    expect(
      (await connectStream(streamUrl(conv.id, ''), { headers: { cookie, origin: `https://${tier.front.domainName}` } }))
        .refused,
    ).toBe(404);
    // CloudFront's function answers paths that are no stream; the API itself refuses anything after its stage.
    expect(
      (await connectStream(`${tier.front.url.replace(/^http/, 'ws')}/sockets/events/${conv.id}/more`)).refused,
    ).toBe(404);
    expect((await connectStream(`${tier.sockets.url}/${tier.sockets.stage}/events/${conv.id}`)).refused).toBe(403);
    // Straight to the API, bypassing CloudFront, the same rule holds.
    expect(
      (
        await connectStream(
          `${tier.sockets.url}/${tier.sockets.stage}?channel=events&id=${conv.id}&session_api_key=${key}`,
        )
      ).refused,
    ).toBe(403);
    expect(tier.aws.denials).toEqual([]);
  }, 240_000);

  /**
   * OpenHands' own clients on the deployment (issue 25): the official TypeScript client on the public
   * host (CloudFront, API Gateway and the authorizer, its socket through the WebSocket API), then Agent
   * Canvas 1.20 in Chromium as a browser meets the service on AWS: Canvas served from its own https
   * origin (the one the synthesis allows by CORS, test/fixtures/cors/tier.json), the stack's `PublicUrl`
   * (`https://<distribution>.cloudfront.net`) as its cloud backend, the socket at `wss://` that host
   * (test/helpers/https-hosts.ts gives the browser both names on loopback). The user is the stream's
   * (their key from the keys CLI, their settings saved above), with a conversation of its own.
   */
  describe("OpenHands' own clients: the TypeScript client and Agent Canvas in Chromium", () => {
    const CANVAS_ORIGIN: string = JSON.parse(
      readFileSync(new URL('../fixtures/cors/tier.json', import.meta.url), 'utf8'),
    )[0];
    const SYNTH =
      'synthesize with the context corsAllowedOrigins of test/fixtures/cors/tier.json, as scripts/test.sh does';
    /** Another user's key, minted by the CLI as the tier mints keys. */
    let foreignKey: string;
    let cid: string;
    let scoped: string;
    let canvas: AgentCanvas | undefined;
    let hosts: HttpsHosts | undefined;
    let browser: Browser | undefined;
    let session: CanvasSession;
    let firstVisit: Promise<void>;
    let ts: typeof import('@openhands/typescript-client');
    let tsClients: typeof import('@openhands/typescript-client/clients');

    beforeAll(async () => {
      const httpApi = ofType(tier.resolved, 'AWS::ApiGatewayV2::Api').find(
        ([, r]) => r.Properties.ProtocolType === 'HTTP',
      );
      expect(httpApi?.[1].Properties.CorsConfiguration?.AllowOrigins ?? [], SYNTH).toContain(CANVAS_ORIGIN);
      if (!existsSync(CHROMIUM)) throw new Error(`No Chromium at ${CHROMIUM}: apt-get install chromium (.ci/run does)`);
      // The client's Node branch loads `ws` with `require`, which an ES module has not (a CommonJS or
      // bundled consumer has): given here, or its socket reports "WebSocket implementation not available".
      (globalThis as { require?: NodeRequire }).require ??= createRequire(import.meta.url);
      [ts, tsClients] = await Promise.all([
        import('@openhands/typescript-client'),
        import('@openhands/typescript-client/clients'),
      ]);
      const ports = await reserveCanvasOrigin();
      const started = await Promise.allSettled([
        (async () => {
          // Every reply scripted so far was taken (conversationOn scripts its own), so this one is this conversation's.
          expect(llm.remaining).toBe(0);
          llm.enqueue(reply.finish('first answer'));
          cid = (await startConversationV1(tier, key, 'hello clients')).conversationId;
          scoped = (await tier.call('GET', `/api/v1/app-conversations?ids=${cid}`, { key })).body[0].session_api_key;
        })(),
        createKey(tier, 'clients-foreign').then((k) => (foreignKey = k)),
        startAgentCanvas(ports).then((c) => (canvas = c)),
        (async () => {
          hosts = await startHttpsHosts({
            [new URL(CANVAS_ORIGIN).hostname]: ports.port,
            [tier.front.domainName]: Number(new URL(tier.front.url).port),
          });
          browser = await launchBrowser('agent-canvas-tier', { args: hosts.chromiumArgs, ignoreHTTPSErrors: true });
        })(),
      ]);
      for (const result of started) if (result.status === 'rejected') throw result.reason;
      const names = new Set([new URL(CANVAS_ORIGIN).hostname, tier.front.domainName]);
      session = await driveCanvas(browser!, {
        canvasOrigin: CANVAS_ORIGIN,
        apiOrigin: `https://${tier.front.domainName}`,
        key,
        org: (await tier.call('GET', '/api/organizations', { key })).body.current_org_id,
        reachable: (url) => names.has(url.hostname),
      });
      // Canvas's first visit (its bundle, its onboarding, the functions its load calls start) runs while
      // the client's test does; the Canvas test waits for it and throws what it threw.
      firstVisit = (async () => {
        await session.open('/');
        await session.page.getByText('Skip for now').click();
      })();
      firstVisit.catch(() => {});
    }, 180_000);
    afterEach(async (context) => {
      if (context.task.result?.state === 'fail') await browser?.shot(`failed-${context.task.name.slice(0, 40)}`);
    });
    afterAll(async () => {
      await browser?.close();
      await hosts?.close();
      await canvas?.close();
    });

    it('the TypeScript client on conversation_url through CloudFront, API Gateway and the authorizer: the conversation, events, settings, the list; a message whose events arrive live over the WebSocket API, paused while its command runs, then run again', async () => {
      const view = (await tier.call('GET', `/api/v1/app-conversations?ids=${cid}`, { key })).body[0];
      // conversation_url names the public host; the client takes its origin (the emulated CloudFront here).
      expect(new URL(view.conversation_url).origin).toBe(`https://${tier.front.domainName}`);
      const host = tier.front.url;
      const live: any[] = [];
      const socketErrors: Error[] = [];
      const remote = new ts.RemoteConversation(
        { kind: 'Agent', llm: { model: 'openai/scripted-model' } } as never,
        new ts.RemoteWorkspace({ host, workingDir: '/workspace/project', apiKey: scoped }),
        { conversationId: cid, callback: (e) => live.push(e), onError: (e) => socketErrors.push(e) },
      );
      await remote.start();
      expect(await remote.state.getExecutionStatus()).toBe('finished');
      expect(((await remote.state.getAgent()) as any).llm.model).toBe('openai/scripted-model');
      await remote.setTitle('Renamed by the client');
      const all = await remote.state.events.getEvents();
      expect(all.length).toBeGreaterThan(2);
      expect(await remote.state.events.count()).toBe(all.length);
      const messages = await remote.state.events.search({ kind: 'MessageEvent' });
      expect(messages.items.length).toBeGreaterThan(0);
      expect(messages.items.every((e: any) => e.kind === 'MessageEvent')).toBe(true);
      expect(await remote.state.events.getEventById((all[1] as any).id)).toEqual(all[1]);
      expect(await remote.getAgentFinalResponse()).toBe('first answer');
      // Settings: the conversation key's view (its model), none of the user's secrets or flags.
      const settings = (await new tsClients.SettingsClient({ host, apiKey: scoped }).getSettings()) as any;
      expect(settings.llm_model).toBe('openai/scripted-model');
      expect(JSON.stringify(settings)).not.toMatch(/sk-tier-secret|_set"/);
      // The list: a conversation key sees its own conversation only; the user's key sees it too.
      const mine = new tsClients.ConversationClient({ host, apiKey: scoped });
      expect(((await mine.searchConversations()) as any).items.map((c: any) => c.id)).toEqual([cid]);
      expect(await mine.countConversations()).toBe(1);
      expect(((await mine.getConversations([cid, conv.id])) as any[]).map((c) => c?.id ?? null)).toEqual([cid, null]);
      const owner = new tsClients.ConversationClient({ host, apiKey: key });
      const listed = ((await owner.searchConversations()) as any).items.find((c: any) => c.id === cid);
      expect(listed).toMatchObject({ title: 'Renamed by the client', execution_status: 'finished' });
      const server = new tsClients.ServerClient({ host, apiKey: scoped });
      expect(await server.getAlive()).toMatchObject({ status: 'ok' });
      expect((await server.getServerInfo()).version).toMatch(/^1\.\d+\.\d+$/);

      // A message and run: its events come back over the client's own socket. A pause while its command
      // runs (the agent server leaves a finished conversation finished), then run resumes it.
      const known = new Set(tier.sockets.connections.keys());
      await remote.startWebSocketClient();
      await until(
        tier,
        "the client's socket open",
        async () => [...tier.sockets.connections.values()].some((c) => c.open && !known.has(c.id)),
        (open) => open,
        20_000,
      );
      await tier.aws.settle();
      llm.enqueue(reply.bash('sleep 4 && echo tier-$((6*7))'), reply.finish('second answer'));
      await remote.sendMessage('a follow-up');
      await remote.run();
      await until(
        tier,
        'the command under way (its action over the socket)',
        async () => JSON.stringify(live),
        (s) => s.includes('sleep 4'),
        30_000,
      );
      await remote.pause();
      // Paused once the agent takes the command over the bridge (docs/openhands-clients.md, interrupt).
      await until(
        tier,
        'paused',
        async () => ((await remote.state.refresh()) as any).execution_status,
        (st) => st === 'paused',
        10_000,
      );
      await remote.run();
      await until(
        tier,
        'the answer over the socket',
        async () => JSON.stringify(live),
        (s) => s.includes('second answer'),
        60_000,
      );
      const text = JSON.stringify(live);
      expect(text).toContain('a follow-up');
      expect(text).toContain('tier-42');
      expect(socketErrors).toEqual([]);
      await until(
        tier,
        'finished after the follow-up',
        async () => ((await remote.state.refresh()) as any).execution_status,
        (s) => s === 'finished',
        30_000,
      );
      await remote.close();
      // Hostile: another user's key is a 404 on this conversation; this conversation's key is refused on
      // another conversation of the same user (HTTP and socket).
      const refused = async (p: Promise<unknown>) =>
        (
          (await p.then(
            () => undefined,
            (e: unknown) => e,
          )) as InstanceType<typeof ts.HttpError>
        )?.status;
      const foreign = (k: string, id: string) =>
        new ts.RemoteConversation(
          { kind: 'Agent' } as never,
          new ts.RemoteWorkspace({ host, workingDir: '/workspace/project', apiKey: k }),
          { conversationId: id },
        );
      expect(await refused(foreign(foreignKey, cid).start())).toBe(404);
      expect(await refused(foreign(scoped, conv.id).start())).toBe(403);
      expect((await connectStream(streamUrl(conv.id, `session_api_key=${scoped}`))).refused).toBe(403);
      expect(tier.aws.denials).toEqual([]);
    }, 120_000);

    it('Agent Canvas 1.20 in Chromium, cloud mode on the public host: connected, the list, settings, the history, a message from the composer answered live', async () => {
      const b = browser!;
      const s = session;
      const page = s.page;
      await firstVisit;
      // Connected (its health check), and the conversation list with the client's title.
      await s.open('/');
      await page.getByText('Renamed by the client').first().waitFor();
      await b.shot('01-home-connected');
      expect(s.calls).toContain('200 GET /api/keys/current');
      // Into the conversation from the list (in the page, no reload): its history, then the composer.
      await page.getByText('Renamed by the client').first().click();
      await page.waitForURL(new RegExp(`/conversations/${cid}`));
      await page.getByText('second answer').first().waitFor();
      llm.enqueue(reply.bash('echo canvas-$((6*7))'), reply.finish('Answered on the deployment'));
      const before = llm.requests.length;
      await s.send('one more from Canvas');
      await page.getByText('Answered on the deployment').first().waitFor({ timeout: 60_000 });
      // The message went over Canvas's socket (wss:// the public host, first-message auth) to the agent.
      expect(JSON.stringify(llm.requests[before]!.body)).toContain('one more from Canvas');
      await page.getByText('Ran echo canvas-$((6*7))').first().waitFor();
      await b.shot('02-conversation-live');
      // The settings, a full load after the live conversation: its Verification page is built from this
      // API's conversation schema.
      await s.open('/settings/verification');
      await page.getByText('Confirmation mode').first().waitFor();
      await b.shot('03-settings-verification');
      expect(failedCanvasCalls(s.calls)).toEqual([]);
      expect(s.calls.some((c) => c.startsWith('200 GET /api/v1/conversation/'))).toBe(true);
      expect(hosts!.connections[tier.front.domainName]).toBeGreaterThan(0);
      await tier.aws.settle();
      expect(tier.aws.denials).toEqual([]);
      expect(tier.sockets.faults).toEqual([]);
    }, 120_000);

    it("a conversation's URL loaded in a fresh tab (Canvas's own new-tab link, and a plain link) shows its history, then its live socket", async () => {
      // The link Canvas makes for a new tab (`?backend=&org=`) and a plain one (the selection stored by the
      // visits above). Not `?backend=` alone: Canvas then picks the organization after the page mounted and
      // leaves the pane empty (docs/openhands-clients.md, "A conversation link without its organization").
      const org = (await tier.call('GET', '/api/organizations', { key })).body.current_org_id;
      const load = async (query: string) => {
        const lines = await loadInNewTab(
          browser!,
          `${CANVAS_ORIGIN}/conversations/${cid}${query}`,
          `https://${tier.front.domainName}`,
          'Answered on the deployment',
        );
        expect(lines.some((l) => l.includes(`<- 200 GET /api/v1/conversation/${cid}/events/search`))).toBe(true);
        expect(lines.filter((l) => / <- [45]\d\d /.test(l) && !l.includes('/api/automation/'))).toEqual([]);
      };
      await Promise.all([load(`?backend=${CLOUD_BACKEND}&org=${org}`), load('')]);
    }, 120_000);

    it("Canvas pauses the running agent (the sandbox's task stopped) and resumes it (a new task carries on)", async () => {
      const page = session.page;
      const record = async () => (await tier.call('GET', `/api/v1/app-conversations?ids=${cid}`, { key })).body[0];
      const sandboxId = (await record()).sandbox_id as string;
      const tasks = () => [...tier.aws.tasks.values()].filter((t) => t.startedBy === sandboxId);
      const tasksBefore = tasks().length;
      // Into the conversation from the list, as the Canvas test above does.
      await session.open('/');
      await page.getByText('Renamed by the client').first().click();
      await page.waitForURL(new RegExp(`/conversations/${cid}`));
      await page.getByText('Answered on the deployment').first().waitFor();
      llm.enqueue(reply.bash('sleep 15 && echo slept'), reply.finish('Resumed and finished'));
      await session.send('take your time');
      const stop = page.getByTestId('stop-button');
      await stop.waitFor();
      await until(
        tier,
        'the command under way',
        async () => llm.requests.length > 0 && JSON.stringify(llm.requests.at(-1)!.body).includes('take your time'),
        (ok) => ok,
        30_000,
      );
      await browser!.shot('04-running');
      await stop.click();
      // The pause stops the sandbox's task (its STOPPED event through the rule): the record shows it paused.
      const paused = await until(tier, 'paused', record, (c) => c?.sandbox_status === 'PAUSED', 30_000);
      expect(paused.sandbox_status).toBe('PAUSED');
      await browser!.shot('05-paused');
      const fetched = () =>
        tier.api.records.filter((r) => r.path === `/api/v1/sandboxes/${sandboxId}/bridge/commands`).length;
      const fetchedBefore = fetched();
      await page.getByTestId('play-button').click();
      // Canvas's resume is the agent server's `run` on conversation_url: the paused sandbox resumes with
      // the run queued; the new task checks in, takes it from the queue, and the agent carries on.
      await until(tier, 'running again', record, (c) => c?.sandbox_status === 'RUNNING', 60_000);
      await page.getByText('Resumed and finished').first().waitFor({ timeout: 60_000 });
      expect(session.calls).toContain(`200 POST /api/conversations/${cid}/run`);
      expect(tasks().length).toBeGreaterThan(tasksBefore);
      expect(fetched()).toBeGreaterThan(fetchedBefore);
      expect((await sandboxOf(tier, key, sandboxId))?.status).toBe('RUNNING');
      await browser!.shot('06-resumed');
      expect(failedCanvasCalls(session.calls)).toEqual([]);
      await tier.aws.settle();
      expect(tier.aws.denials).toEqual([]);
    }, 120_000);

    it('a new conversation from the home composer reaches the agent on the deployment and its answer appears', async () => {
      const page = session.page;
      llm.enqueue(reply.finish('A fresh answer on the deployment'));
      await session.open('/');
      await session.send('start something new');
      await page.waitForURL(/\/conversations\/[0-9a-f]{32}/, { timeout: 60_000 });
      await page.getByText('A fresh answer on the deployment').first().waitFor({ timeout: 60_000 });
      await browser!.shot('07-new-conversation');
      expect(session.calls).toContain('200 POST /api/v1/app-conversations');
      const id = new URL(page.url()).pathname.split('/').at(-1)!;
      const [started] = (await tier.call('GET', `/api/v1/app-conversations?ids=${id}`, { key })).body;
      expect(started).toMatchObject({ id, sandbox_status: 'RUNNING' });
      expect(failedCanvasCalls(session.calls)).toEqual([]);
      await tier.aws.settle();
      expect(tier.aws.denials).toEqual([]);
    }, 120_000);
  });

  it('idle 10 minutes: API Gateway closes it, $disconnect forgets it, a later ingest posts to no one; pings keep it open until the 2-hour limit', async () => {
    const idle = await connectStream(streamUrl(conv.id, `session_api_key=${conv.scoped}`));
    await tier.aws.settle();
    const posts = () => tier.aws.calls.filter((c) => c.operation === 'execute-api:ManageConnections').length;
    const disconnects = () => tier.sockets.records.filter((r) => r.routeKey === '$disconnect').length;
    const before$ = disconnects();
    await tier.sockets.advance(WEBSOCKET_LIMITS.idleMs);
    expect((await idle.closed).code).toBe(1001);
    await until(
      tier,
      '$disconnect ran',
      async () => disconnects(),
      (n) => n > before$,
    );
    const before = posts();
    await ingest(tier, conv, conv.stored + 1, [event(300)]);
    conv.stored += 1;
    expect(posts()).toBe(before);

    const pinged = await connectStream(streamUrl(conv.id, `session_api_key=${conv.scoped}`));
    await tier.aws.settle();
    // A ping every 9 minutes keeps it open past the idle limit, up to the 2-hour limit and no further.
    const pings = Math.ceil(WEBSOCKET_LIMITS.maxMs / (9 * 60_000)); // 14: the last advance crosses 2 hours
    for (let t = 1; t <= pings; t++) {
      pinged.ws.send(JSON.stringify({ action: 'ping' })); // consumed by the mock ping route: no function runs
      await until(
        tier,
        'ping consumed',
        async () => tier.sockets.records.filter((r) => r.routeKey === 'ping').length,
        (n) => n >= t,
      );
      await tier.sockets.advance(9 * 60_000);
      if (t < pings) expect(pinged.ws.readyState, `open after ${t * 9} minutes`).toBe(1);
    }
    const closed = await Promise.race([pinged.closed, new Promise((r) => setTimeout(() => r('still open'), 5000))]);
    expect(closed).toEqual({ code: 1001, reason: 'Going away' });
    expect(tier.sockets.records.filter((r) => r.routeKey === 'ping').every((r) => r.status === 200)).toBe(true);
  }, 90_000);
});

describe("mutation: the ingest function's execute-api:ManageConnections grant removed", () => {
  let tier: TierStack;
  let llm: ScriptedLlm;
  beforeAll(async () => {
    [tier, llm] = await Promise.all([
      // Two statements: the stream's, and the bridge socket's (the pause command at the plan's event cap).
      startTier({ mutate: (t) => expect(withoutAction(t, 'execute-api:ManageConnections', 'postEvents')).toBe(2) }),
      startScriptedLlm(),
    ]);
  }, 120_000);
  afterAll(async () => {
    await tier?.stop();
    await llm?.close();
  });

  it('the resend still works, but live events never reach the client: PostToConnection is denied to the ingest role', async () => {
    const key = await createKey(tier, 'mutant');
    const conv = await conversationOn(tier, llm, key);
    const client = await connectStream(
      `${tier.front.url.replace(/^http/, 'ws')}/sockets/events/${conv.id}?resend_all=true&session_api_key=${conv.scoped}`,
    );
    expect(client.refused).toBeUndefined();
    await client.until(conv.stored);
    await tier.aws.settle();
    // The bridge route still stores the event (a failed push costs the client nothing a reconnect does not bring).
    await ingest(tier, conv, conv.stored + 1, [event(1)]);
    await new Promise((r) => setTimeout(r, 500));
    expect(seqs(client.messages)).toEqual(range(1, conv.stored));
    const denied = tier.aws.denials.filter((d) => d.request.action === 'execute-api:ManageConnections');
    expect(denied.length).toBeGreaterThan(0);
    expect(
      denied.every(
        (d) => d.principal.includes('FnpostEvents') && /\/sockets\/POST\/@connections\//.test(d.request.resource),
      ),
    ).toBe(true);
    expect(tier.lambda.logsOf(tier.lambda.byName('postEvents').arn)).toContain('stream.feed-failed');
    await client.close();
  }, 240_000);
});

describe("a replay longer than one invocation: the resend function's Timeout made 3 s", () => {
  let tier: TierStack;
  let llm: ScriptedLlm;
  beforeAll(async () => {
    [tier, llm] = await Promise.all([
      startTier({
        // The emulation kills it at its Timeout and gives the handler the remaining time from it.
        mutate: (t) => {
          const resend = ofType(t, 'AWS::Lambda::Function').filter(([, r]) =>
            String(r.Metadata?.['aws:cdk:path']).includes('/Fn-streamResend/'),
          );
          expect(resend).toHaveLength(1);
          resend[0]![1].Properties.Timeout = 3;
        },
      }),
      startScriptedLlm(),
    ]);
  }, 120_000);
  afterAll(async () => {
    await tier?.stop();
    await llm?.close();
  });

  it('resend_all of 2,000 more events: the function stops within its time and invokes itself with resume; the client gets every event once, in order', async () => {
    const key = await createKey(tier, 'long-replay');
    const conv = await conversationOn(tier, llm, key);
    const extra = 2_000;
    for (let first = conv.stored + 1; first <= conv.stored + extra; first += 100)
      await ingest(
        tier,
        conv,
        first,
        range(first, first + 99).map((n) => event(n)),
      );
    const total = conv.stored + extra;
    const client = await connectStream(
      `${tier.front.url.replace(/^http/, 'ws')}/sockets/events/${conv.id}?resend_all=true&session_api_key=${conv.scoped}`,
    );
    expect(client.refused).toBeUndefined();
    await client.until(total, 180_000);
    await tier.aws.settle();
    expect(seqs(client.messages)).toEqual(range(1, total));
    const resendArn = tier.lambda.byName('streamResend').arn;
    const runs = tier.aws.asyncInvocations.filter((i) => i.functionArn === resendArn);
    // Each invocation ended by itself (none killed at its Timeout); at least one went on from sentSeq.
    expect(runs.filter((r) => !r.result.ok)).toEqual([]);
    const resumed = runs.filter((r) => (r.payload as { resume?: boolean }).resume === true);
    expect(resumed.length).toBeGreaterThanOrEqual(1);
    expect(runs).toHaveLength(resumed.length + 1);
    expect(tier.lambda.logsOf(resendArn)).toContain('stream.resend-continues');
    expect(tier.aws.denials).toEqual([]);
    await client.close();
  }, 400_000);
});
