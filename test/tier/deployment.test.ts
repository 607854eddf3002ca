import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { reply, startScriptedLlm, type ScriptedLlm } from '#test/helpers/scripted-llm.ts';
import {
  createKey,
  pauseResumeDelete,
  settingsRoundTrip,
  startConversationLegacy,
  startConversationV1,
  startSandbox,
  until,
} from '#test/tier/flows.ts';
import { startTier, type TierStack } from '#test/tier/stack.ts';

/**
 * The deployment as synthesized (cdk.out), run locally: see test/tier/README.md. These tests fail
 * when a function lacks an environment variable or a permission its code needs, when a route is
 * wired to the wrong function, or when an event never reaches its handler.
 */
let tier: TierStack;
let llm: ScriptedLlm;
let key: string;
/** The V1 conversation of the seed flows (Agent Canvas's reads below open it). */
let v1Conversation: string;

beforeAll(async () => {
  [tier, llm] = await Promise.all([startTier(), startScriptedLlm()]);
  key = await createKey(tier, 'alice');
}, 120_000);
afterAll(async () => {
  await tier?.stop();
  await llm?.close();
});

describe('the functions run as deployed', () => {
  it("see only the template's environment: this process's POWERTOOLS_LOG_LEVEL=WARN does not reach them", async () => {
    expect(process.env.POWERTOOLS_LOG_LEVEL).toBe('WARN');
    expect((await tier.call('GET', '/health')).status).toBe(200);
    expect(tier.lambda.logsOf(tier.lambda.byName('health').arn)).toContain('"level":"INFO"');
    expect(tier.lambda.byName('health').environment).not.toHaveProperty('POWERTOOLS_LOG_LEVEL');
  });
});

describe('keys, created as docs/deploy.md says', () => {
  it('the keys CLI with --aws writes a key the authorizer accepts; list and revoke work the same way', async () => {
    expect((await tier.call('GET', '/api/v1/sandbox-specs/search', { key })).status).toBe(200);
    const other = await createKey(tier, 'bob');
    const listed = await tier.keys(['list', '--user', 'bob']);
    expect(listed.code).toBe(0);
    const keyId = other.split('_')[1]!;
    expect(listed.stdout).toContain(keyId);
    expect((await tier.keys(['revoke', keyId])).code).toBe(0);
    const after = await tier.call('GET', '/api/v1/sandbox-specs/search', { key: other });
    expect(after.status).toBe(401);
  });
});

describe('the seed flows, end to end on the synthesized stack', () => {
  it('settings round trip: saved sealed with KMS, read back masked', async () => {
    await settingsRoundTrip(tier, key, llm.baseUrl);
  });

  it('a sandbox starts (the real program checks in with its enrollment token), pauses, resumes and is deleted, with ECS events through the rule', async () => {
    const sb = await startSandbox(tier, key);
    expect(tier.aws.denials).toEqual([]);
    // The spec's own task definition, as deployed: nothing registered per sandbox.
    const running = () =>
      [...tier.aws.tasks.values()].find((t) => t.startedBy === sb.id && t.desiredStatus === 'RUNNING')!;
    const task = running();
    expect(task.taskDefinitionArn).toMatch(/task-definition\/AgentConversationService-sandbox-default:1$/);
    expect(task.tags).toEqual(expect.arrayContaining([{ key: 'sandbox-id', value: sb.id }]));
    // The workspace is the task's own disk; it survives the pause only as a snapshot in S3.
    writeFileSync(join(tier.aws.taskPath(task.taskArn, '/workspace'), 'notes.md'), 'kept across a pause');
    await pauseResumeDelete(tier, key, sb.id, {
      paused: async () => {
        const keys = await until(
          tier,
          'snapshot saved',
          async () => tier.aws.objectKeys(`sandboxes/${sb.id}/`),
          (k) => k.length === 1,
        );
        expect(keys[0]).toMatch(new RegExp(`^sandboxes/${sb.id}/\\d{13}-[0-9a-f]{16}\\.tar\\.gz$`));
      },
      resumed: async () => {
        const next = running();
        expect(next.taskArn).not.toBe(task.taskArn);
        const restored = join(tier.aws.taskPath(next.taskArn, '/workspace'), 'notes.md');
        await until(
          tier,
          'workspace restored',
          async () => existsSync(restored),
          (ok) => ok,
        );
        expect(readFileSync(restored, 'utf8')).toBe('kept across a pause');
      },
    });
    expect(tier.aws.denials).toEqual([]);
    // S3 evaluated each presigned request as the role of the function that signed it: the POST as the
    // upload route's, the GET as the download route's; the deletion is the snapshot-removal function's,
    // invoked asynchronously (Event) by the one that finished the delete (ecsEvents here, or the delete route).
    const s3 = tier.aws.calls.filter((c) => c.operation.startsWith('s3:'));
    const roleOf = (id: string) => tier.lambda.byName(id).roleArn;
    expect(s3).toEqual(
      expect.arrayContaining([
        { principal: roleOf('sandboxSnapshotUpload'), operation: 's3:PutObject', allowed: true },
        { principal: roleOf('sandboxSnapshotComplete'), operation: 's3:GetObject', allowed: true },
        { principal: roleOf('sandboxSnapshotDownload'), operation: 's3:GetObject', allowed: true },
      ]),
    );
    expect(s3.some((c) => c.operation === 's3:DeleteObject' && c.principal === roleOf('sandboxSnapshotsDelete'))).toBe(
      true,
    );
    expect(s3.filter((c) => c.operation === 's3:DeleteObject').map((c) => c.principal)).not.toContain(
      roleOf('ecsEvents'),
    );
    const removalArn = tier.lambda.byName('sandboxSnapshotsDelete').arn;
    const removal = await until(
      tier,
      'snapshot removal recorded',
      async () => tier.aws.asyncInvocations.filter((i) => i.functionArn === removalArn),
      (r) => r.length > 0,
    );
    // The delete route and the ECS event may both finish the delete when the task stops between them:
    // each then asks for the removal, which is idempotent. Every ask is for this sandbox and succeeds.
    expect(new Set(removal.map((i) => JSON.stringify([i.payload, i.result.ok])))).toEqual(
      new Set([JSON.stringify([{ sandboxId: sb.id }, true])]),
    );
    expect(removal.length).toBeLessThanOrEqual(2);
    // The fake ECS reports every state change; the rule's pattern lets only RUNNING (a start's phases) and STOPPED through.
    const toHandler = tier.bus.deliveries
      .filter((d) => d.target.includes('ecsEvents'))
      .map((d) => (d.event as any).detail.lastStatus);
    expect(new Set(toHandler)).toEqual(new Set(['RUNNING', 'STOPPED']));
  }, 180_000);

  it("a user's runtime image: its task definition is registered once (RegisterTaskDefinition and PassRole as deployed) and reused; the factor sizes the task", async () => {
    const owner = await createKey(tier, 'imageowner');
    const saved = await tier.call('POST', '/api/settings', {
      key: owner,
      body: { sandbox_runtime_container_image: 'ghcr.io/acme/sandbox:1', remote_runtime_resource_factor: 2 },
    });
    expect(saved.status).toBe(200);
    const a = await startSandbox(tier, owner);
    const b = await startSandbox(tier, owner);
    const tasks = [a, b].map((sb) => [...tier.aws.tasks.values()].find((t) => t.startedBy === sb.id)!);
    expect(tasks[0]!.taskDefinitionArn).toMatch(
      /task-definition\/AgentConversationService-sandbox-default-runtime-[0-9a-f]{16}:1$/,
    );
    expect(tasks[1]!.taskDefinitionArn).toBe(tasks[0]!.taskDefinitionArn);
    expect(tasks[0]!.overrides).toMatchObject({ cpu: '2048', memory: '4096' });
    expect(
      tier.aws.calls.filter((c) => c.operation === 'ecs:RegisterTaskDefinition' && c.allowed).length,
    ).toBeGreaterThan(0);
    expect(tier.aws.denials).toEqual([]);
    for (const sb of [a, b])
      expect((await tier.call('DELETE', `/api/v1/sandboxes/${sb.id}`, { key: owner })).status).toBe(200);
    await tier.bus.settle();
  }, 180_000);

  it('V1 conversation start: the agent in the sandbox talks to the scripted LLM and its events are searchable', async () => {
    await settingsRoundTrip(tier, key, llm.baseUrl).catch(() => undefined);
    llm.enqueue(reply.bash('echo hello from the tier'), reply.finish('Done on the tier.'));
    const { conversationId, events } = await startConversationV1(tier, key, 'Say hello');
    v1Conversation = conversationId;
    const kinds = events.map((e) => e.kind);
    expect(kinds).toContain('MessageEvent');
    expect(JSON.stringify(events)).toContain('hello from the tier');
    expect(tier.aws.denials).toEqual([]);
  }, 240_000);

  it("Agent Canvas's load calls and the late-2025 UI's as deployed: settings, schemas, models, profiles, secrets, the conversation's events, skills and config", async () => {
    const get = async (path: string) => {
      const res = await tier.call('GET', path, { key });
      expect(res.status, `${path}: ${res.text.slice(0, 300)} ${tier.explain()}`).toBe(200);
      return res.body;
    };
    const settings = await get('/api/v1/settings');
    expect(settings.agent_settings.llm.api_key).toBeNull();
    expect(settings.llm_api_key_set).toBe(true);
    const saved = await tier.call('POST', '/api/v1/settings', {
      key,
      body: { conversation_settings_diff: { max_iterations: 42 } },
    });
    expect(saved.status, saved.text).toBe(200);
    expect((await get('/api/settings')).max_iterations).toBe(42);
    expect((await get('/api/v1/settings/agent-schema')).sections.length).toBeGreaterThan(0);
    expect((await get('/api/v1/settings/conversation-schema')).sections.map((s: any) => s.key)).toEqual([
      'verification',
      'general',
    ]);
    expect((await get('/api/v1/config/models/search')).items.length).toBeGreaterThan(0);
    expect(await get('/api/agent-profiles')).toEqual({ profiles: [], active_agent_profile_id: null });
    expect(await get('/api/v1/settings/profiles')).toEqual({ profiles: [], active_profile: null });
    const org = (await get('/api/organizations')).current_org_id;
    expect(await get(`/api/organizations/${org}/profiles`)).toEqual({ profiles: [], active_profile: null });
    const singular = await get(`/api/v1/conversation/${v1Conversation}/events/search?limit=100`);
    expect(singular.items).toEqual((await get(`/api/conversations/${v1Conversation}/events/search?limit=100`)).items);
    expect(singular.items.length).toBeGreaterThan(0);
    expect(await get(`/api/v1/app-conversations/${v1Conversation}/skills`)).toEqual({ skills: [] });
    expect((await get(`/api/conversations/${v1Conversation}/config`)).runtime_id).toBeTruthy();
    const created = await tier.call('POST', '/api/secrets', {
      key,
      body: { name: 'TIER_SECRET', value: 'tier-secret-value', description: 'tier' },
    });
    expect(created.status, created.text).toBe(201);
    expect((await get('/api/v1/secrets/search')).items).toContainEqual({ name: 'TIER_SECRET', description: 'tier' });
    expect((await tier.call('DELETE', '/api/v1/secrets/TIER_SECRET', { key })).status).toBe(200);
    expect((await get('/api/secrets')).custom_secrets.map((x: { name: string }) => x.name)).not.toContain(
      'TIER_SECRET',
    );
    expect(tier.aws.denials).toEqual([]);
  }, 60_000);

  it('legacy conversation start (POST /api/conversations) runs the same way', async () => {
    llm.enqueue(reply.finish('Legacy done.'));
    const { conversationId, events } = await startConversationLegacy(tier, key, 'Hello from the legacy API');
    expect(events.map((e) => e.kind)).toContain('MessageEvent');
    // The count is the counter item that the start and the delete functions keep, each under its own role.
    const count = async () => (await tier.call('GET', '/api/v1/app-conversations/count', { key })).body;
    const listed = (await tier.call('GET', '/api/v1/app-conversations/search?limit=100', { key })).body.items.length;
    expect(await count()).toBe(listed);
    expect((await tier.call('DELETE', `/api/conversations/${conversationId}`, { key })).status).toBe(200);
    expect(await count()).toBe(listed - 1);
    expect(tier.aws.denials).toEqual([]);
  }, 240_000);

  it('the sweeper runs through its schedule, invoked with the schedule role', async () => {
    const run = await tier.bus.runSchedule('SweeperSchedule');
    expect(run.target).toMatch(/sweeper/i);
    expect(run.result.error).toBeUndefined();
    expect(run.result.ok).toBe(true);
  });

  it('an idempotent create as deployed: the idempotency table keeps answers 24 hours by TTL, and a repeated POST /api/keys with one Idempotency-Key creates one key through the bundle', async () => {
    expect(Object.entries(tier.ttl).find(([name]) => name.includes('idempotency'))?.[1]).toBe('expiration');
    const headers = { 'idempotency-key': 'tier-idem-1' };
    const first = await tier.call('POST', '/api/keys', { key, body: { name: 'tier-idem' }, headers });
    const again = await tier.call('POST', '/api/keys', { key, body: { name: 'tier-idem' }, headers });
    expect(first.status, tier.explain()).toBe(200);
    expect(again.text).toBe(first.text);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    const other = await tier.call('POST', '/api/keys', { key, body: { name: 'tier-other' }, headers });
    expect(other.status).toBe(422);
    const listed = (await tier.call('GET', '/api/keys', { key })).body as { name: string }[];
    expect(listed.filter((k) => k.name === 'tier-idem')).toHaveLength(1);
  });

  it('no AWS call was denied and no event delivery failed during the flows', async () => {
    await tier.bus.settle();
    expect(tier.aws.denials).toEqual([]);
    expect(tier.bus.failures.map((d) => d.result.error)).toEqual([]);
  });
});

describe('the web console and the API docs as deployed', () => {
  it('GET / serves its page with the Content-Security-Policy, and the assets it names come from their function', async () => {
    const page = await tier.call('GET', '/', { key: null });
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toMatch(/^text\/html/);
    const csp = page.headers.get('content-security-policy')!;
    expect(csp).toContain("script-src 'self';");
    expect(csp).toContain("frame-ancestors 'none'");
    // ...and the issuer's token endpoint (its sign-in, below).
    expect(csp).toMatch(/connect-src 'self' ws:\/\/\S+ wss:\/\/\S+( https:\/\/\S+)?;/);
    expect(page.headers.get('x-content-type-options')).toBe('nosniff');
    for (const href of [...page.text.matchAll(/(?:src|href)="(assets\/[^"]+)"/g)].map((m) => m[1]!)) {
      const asset = await tier.call('GET', `/${href}`, { key: null });
      expect(asset.status, href).toBe(200);
      expect(asset.text.length, href).toBeGreaterThan(1000);
      expect(tier.api.records.findLast((r) => r.path === `/${href.split('?')[0]}`)!.routeKey).toBe(
        'GET /assets/{file}',
      );
    }
    expect((await tier.call('GET', '/assets/manifest.json', { key: null })).status).toBe(404);
  });

  it("GET /docs/assets/{file} serves Swagger UI's files, carried in its bundle", async () => {
    for (const file of ['swagger-ui-bundle.js', 'swagger-ui.css']) {
      const asset = await tier.call('GET', `/docs/assets/${file}`, { key: null });
      expect(asset.status, file).toBe(200);
      expect(asset.text.length, file).toBeGreaterThan(10_000);
    }
  });

  it("GET /auth/callback (the issuer's return) serves the same page from its own function, its assets one level up, its CSP open to the issuer's token endpoint", async () => {
    const page = await tier.call('GET', '/auth/callback?code=c0de&state=st4te', { key: null });
    expect(page.status).toBe(200);
    expect(tier.api.records.findLast((r) => r.path === '/auth/callback')!.routeKey).toBe('GET /auth/callback');
    const csp = page.headers.get('content-security-policy')!;
    expect(csp).toContain("script-src 'self';");
    // The stack's Cognito pool: its hosted domain, where the page redeems the code.
    expect(csp).toMatch(/connect-src 'self' ws:\/\/\S+ wss:\/\/\S+ https:\/\/\S+amazoncognito\.com;/);
    const hrefs = [...page.text.matchAll(/(?:src|href)="\.\.\/(assets\/[^"]+)"/g)].map((m) => m[1]!);
    expect(hrefs.length).toBe(2);
    for (const href of hrefs) expect((await tier.call('GET', `/${href}`, { key: null })).status, href).toBe(200);
    expect((await tier.call('GET', `/auth/callback?code=${'x'.repeat(3000)}`, { key: null })).status).toBe(422);
  });
});

/** Path parameters for the sweep: a real sandbox and conversation where a route names one, well-formed ids that name nothing elsewhere. */
const probePath = (routeKey: string, ids: { sandbox: string; conversation: string }) =>
  routeKey
    .split(' ')[1]!
    .replace(/\{sandbox_id\}/g, ids.sandbox)
    .replace(/\{conversation_id\}/g, ids.conversation)
    .replace(/\{seq\}/g, '1')
    .replace(/\{[^}]+\}/g, 'tierprobe0000000000000000000000000');

describe('every route of the template answers without a 5xx', () => {
  // The route keys come from the synthesized template, so a new route is swept without a change here.
  const keys = () => tier.api.routeKeys().filter((r) => r.key !== '$default');
  it('the template has routes to sweep', () => {
    expect(keys().length).toBeGreaterThan(20);
  });
  for (const authenticated of [true, false]) {
    const name = authenticated
      ? 'authenticated (a user key where the authorizer guards the route, a running sandbox and its own key elsewhere): each route answers below 500'
      : 'unauthenticated: each route answers below 500, 401 where the authorizer guards it';
    it(name, async () => {
      // Routes without the authorizer check a sandbox's key themselves: give them a real one.
      const sandbox = authenticated ? await startSandbox(tier, key) : undefined;
      // A conversation of this user, so the routes on one reach past their 404 (its start need not finish).
      // In that sandbox: a new one could push it out under the per-user running limit, and its key with it.
      const started = authenticated
        ? await tier.call('POST', '/api/v1/app-conversations', { key, body: { sandbox_id: sandbox!.id } })
        : undefined;
      const ids = {
        sandbox: sandbox?.id ?? 'tierprobe',
        conversation: started?.body?.app_conversation_id ?? 'tierprobe0000000000000000000000000',
      };
      const sandboxKey = sandbox ? await tier.sandboxKey(sandbox.id) : null;
      if (authenticated) expect(sandboxKey).toMatch(/.{16,}/);
      const failures: string[] = [];
      // The sandbox's own routes first: the user routes after them pause and delete that sandbox.
      for (const { key: routeKey, auth } of keys().sort((a, b) => Number(a.auth) - Number(b.auth))) {
        const method = routeKey.split(' ')[0]!;
        const res = await tier.call(method, probePath(routeKey, ids), {
          ...(authenticated ? { key: auth ? key : sandboxKey } : {}),
          ...(['POST', 'PUT', 'PATCH'].includes(method) ? { body: {} } : {}),
        });
        if (res.status >= 500) failures.push(`${routeKey} -> ${res.status}: ${lastError(routeKey)}`);
        if (!authenticated && auth && res.status !== 401) failures.push(`${routeKey} -> ${res.status} without a key`);
        // The sandbox's own key opens its bridge routes (check-in takes the one-time enrollment token instead).
        if (authenticated && !auth && !routeKey.endsWith('/check-in') && res.status === 401)
          failures.push(`${routeKey} -> 401 with the sandbox's own key`);
      }
      expect(failures).toEqual([]);
    }, 180_000);
  }
  it('$default answers unknown paths with 404 (the fallback function, invoked with its permission)', async () => {
    const res = await tier.call('GET', '/no/such/route');
    expect(res.status).toBe(404);
    expect(tier.api.records.findLast((r) => r.path === '/no/such/route')!.routeKey).toBe('$default');
  });
});

/** The configuration error a function logged last, if any: the sweep's failure message names it. */
function lastError(routeKey: string): string {
  const arn = tier.api.records.filter((r) => r.routeKey === routeKey).at(-1)?.functionArn;
  const logs = arn ? tier.lambda.logsOf(arn) : '';
  return (
    /Configuration error: [^"]+/.exec(
      logs
        .split('\n')
        .reverse()
        .find((l) => l.includes('"error"')) ?? '',
    )?.[0] ?? ''
  );
}
