import { readdirSync, readFileSync, readlinkSync, writeFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PROJECT_ROOT } from '#shared/wiring/local.ts';
import { allEvents, startConversation, waitForExecutionStatus } from '#test/helpers/conversations.ts';
import { processEnv, sandboxPids } from '#test/helpers/sandboxes.ts';
import { startAgentStack, type AgentStack } from '#test/helpers/agent-stack.ts';
import { reply, type ScriptedLlm } from '#test/helpers/scripted-llm.ts';
import type { TestStack } from '#test/helpers/stack.ts';
import { waitFor } from '#test/helpers/wait.ts';

/**
 * A hostile agent: a scripted LLM drives the agent's bash tool through every breakout that worked
 * before containment (issue "Security", finding 3). Each attempt must fail, while ordinary work in
 * the workspace still succeeds. This test FAILS where bubblewrap cannot run: it never skips.
 */
let agent: AgentStack;
let stack: TestStack;
let llm: ScriptedLlm;
let victimKey: string;
let victimSandbox: string;
let victimToken: string;
const SERVER_SECRET = 'server-env-marker-7f3a9c';
const SCRATCH = `/tmp/acs-containment-${process.pid}-${Date.now()}`;

/** TCP ports this (server) process listens on: the gateway, the scripted LLM; dynalite must not be one. */
function listeningPorts(): number[] {
  const inodes = new Set<string>();
  for (const fd of readdirSync('/proc/self/fd')) {
    try {
      const m = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/self/fd/${fd}`));
      if (m) inodes.add(m[1]!);
    } catch {
      // closed meanwhile
    }
  }
  const ports: number[] = [];
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    for (const line of readFileSync(table, 'utf8').split('\n').slice(1)) {
      const cols = line.trim().split(/\s+/);
      // st 0A = LISTEN
      if (cols[3] === '0A' && inodes.has(cols[9]!)) ports.push(parseInt(cols[1]!.split(':')[1]!, 16));
    }
  }
  return [...new Set(ports)];
}

beforeAll(async () => {
  process.env.CONTAINMENT_SERVER_SECRET = SERVER_SECRET;
  agent = await startAgentStack({
    stack: { memory: false, specsFile: join(PROJECT_ROOT, 'test/fixtures/sandboxes/specs.json') },
  });
  ({ stack, llm } = agent);
  // Another user's sandbox that never checks in: its process holds an unused enrollment token.
  victimKey = await stack.newUser('victim');
  const started = await stack.call('POST', '/api/v1/sandboxes?sandbox_spec_id=never-checks-in', { key: victimKey });
  victimSandbox = started.body.id;
  expect(started.body).toMatchObject({ sandbox_spec_id: 'never-checks-in', status: 'STARTING' });
  const [pid] = await waitFor(
    "the victim sandbox's process",
    () => {
      const pids = sandboxPids(victimSandbox).filter((p) => processEnv(p)?.ENROLLMENT_TOKEN);
      return pids.length ? pids : undefined;
    },
    { timeoutMs: 5_000, intervalMs: 50 },
  );
  victimToken = processEnv(pid!)!.ENROLLMENT_TOKEN!;
  writeFileSync(
    join(stack.dataDir, 'sandboxes', victimSandbox, 'workspace', 'victim-notes.txt'),
    'victim-workspace-secret\n',
  );
}, 60_000);
afterAll(async () => {
  delete process.env.CONTAINMENT_SERVER_SECRET;
  await agent?.stop();
});

/** Both databases' sockets (the events table has one of its own). */
const socketPaths = () => [stack.dynamoEndpoint, stack.eventsDynamoEndpoint].map((e) => e.replace(/^unix:/, ''));

/** A bash step whose output is framed by markers, so each attempt's observation can be found. */
const attempt = (name: string, command: string) =>
  reply.bash(`echo "@@begin ${name}"; ( set -o pipefail; ${command} ) 2>&1; echo "@@end ${name} rc=$?"`);

describe('a hostile agent in a contained sandbox', () => {
  it('runs contained: the server says so and the record says so', () => {
    expect(stack.containment).toBe('bwrap');
    expect(stack.dynamoEndpoint).toMatch(/^unix:\//);
    expect(stack.eventsDynamoEndpoint).toMatch(/^unix:\//);
    expect(listeningPorts().length).toBeGreaterThan(0);
  });

  it('cannot read the data dir, the checkout, other workspaces, other processes or the database; ordinary work succeeds', async () => {
    const dataDir = stack.dataDir;
    const ports = listeningPorts();
    const dynamoProbe = `
      const http = require('node:http');
      const put = JSON.stringify({ TableName: 'acs-keys', Item: { keyId: { S: 'k_mallory' }, userId: { S: 'mallory' }, keyHash: { S: 'x' } } });
      const targets = [...${JSON.stringify(ports)}.map((port) => ({ host: '127.0.0.1', port })), ...${JSON.stringify(socketPaths())}.map((socketPath) => ({ socketPath }))];
      let left = targets.length * 2;
      for (const t of targets) for (const [target, body] of [['ListTables', '{}'], ['PutItem', put]]) {
        const req = http.request({ ...t, method: 'POST', path: '/', headers: { 'content-type': 'application/x-amz-json-1.0', 'x-amz-target': 'DynamoDB_20120810.' + target } }, (res) => {
          let b = ''; res.on('data', (d) => (b += d));
          res.on('end', () => { console.log(JSON.stringify(t), target, res.statusCode, b.slice(0, 200)); if (--left === 0) process.exit(0); });
        });
        req.on('error', (e) => { console.log(JSON.stringify(t), target, 'error', e.code); if (--left === 0) process.exit(0); });
        req.end(body);
      }`;
    llm.enqueue(
      attempt('secret-key', `cat ${dataDir}/secret.key`),
      attempt('dev-api-key', `cat ${dataDir}/dev-api-key`),
      attempt('database-files', `ls -la ${dataDir}/dynamodb && cat ${dataDir}/dynamodb/*`),
      attempt('data-dir', `ls -A ${dataDir} ${dataDir}/sandboxes`),
      attempt('checkout', `ls ${PROJECT_ROOT} && cat ${PROJECT_ROOT}/package.json`),
      attempt('other-workspace', `cat ${dataDir}/sandboxes/${victimSandbox}/workspace/victim-notes.txt`),
      attempt('server-environ', `cat /proc/${process.pid}/environ | tr '\\0' '\\n'`),
      attempt(
        'all-environ',
        `cat /proc/[0-9]*/environ 2>/dev/null | tr '\\0' '\\n' | grep -E 'ENROLLMENT_TOKEN|CONTAINMENT_SERVER_SECRET'; ls /proc | grep -cE '^[0-9]+$'`,
      ),
      reply.tool('str_replace_editor', { command: 'create', path: 'probe.js', file_text: dynamoProbe }),
      attempt('db-calls', 'node probe.js'),
      attempt('write-key-file', `echo mallory > ${dataDir}/dev-api-key`),
      // Ordinary work.
      reply.tool('str_replace_editor', {
        command: 'create',
        path: 'app/hello.sh',
        file_text: 'echo "hello from $(basename "$PWD")"\n',
      }),
      reply.tool('str_replace_editor', {
        command: 'str_replace',
        path: 'app/hello.sh',
        old_str: 'hello from',
        new_str: 'greetings from',
      }),
      attempt(
        'ordinary',
        `cd app && bash hello.sh && node -e "console.log('node', 6 * 7)" && git init -q && git -c user.name=Agent -c user.email=a@example.test commit -qam x --allow-empty && git add -A && git -c user.name=Agent -c user.email=a@example.test commit -qm "add hello" && git log -1 --format=%s && echo tmp-ok > ${SCRATCH} && cat ${SCRATCH}`,
      ),
      reply.finish('done trying'),
    );
    const task = await startConversation(stack, {
      initial_message: { role: 'user', content: [{ type: 'text', text: 'Break out' }], run: true },
    });
    expect(task.status).toBe('READY');
    const conv = await waitForExecutionStatus(
      stack,
      task.app_conversation_id,
      ['finished', 'error'],
      undefined,
      90_000,
    );
    expect(conv.execution_status).toBe('finished');

    const observations = (await allEvents(stack, task.app_conversation_id))
      .filter((e) => e.kind === 'ObservationEvent')
      .map((e) => JSON.stringify(e.observation));
    const seen = (name: string) => {
      const found = observations.find((o) => o.includes(`@@begin ${name}`));
      if (!found) throw new Error(`no observation for ${name}`);
      return found;
    };
    const failed = (name: string) => expect(seen(name)).toMatch(new RegExp(`@@end ${name} rc=[1-9]`));

    // Of the data dir, only the path down to this sandbox's own directory exists.
    expect(seen('data-dir')).toContain(
      `@@begin data-dir\\n${dataDir}:\\nsandboxes\\n\\n${dataDir}/sandboxes:\\n${task.sandbox_id}\\n@@end data-dir rc=0`,
    );
    for (const name of [
      'secret-key',
      'dev-api-key',
      'database-files',
      'checkout',
      'other-workspace',
      'server-environ',
    ]) {
      failed(name);
      expect(seen(name)).toContain('No such file or directory');
    }
    // The test's data dir is under /tmp, so that write lands in the sandbox's private /tmp (under a
    // data dir elsewhere, the read-only root refuses it): either way the host's file is untouched (below).
    expect(seen('write-key-file')).toMatch(/@@end write-key-file rc=0|Read-only file system/);
    const all = observations.join('\n');
    expect(all).not.toContain(readFileSync(join(dataDir, 'secret.key'), 'utf8').trim());
    expect(all).not.toContain(stack.devKey);
    expect(all).not.toContain('victim-workspace-secret');
    expect(all).not.toContain('agent-conversation-service'); // package.json of the checkout
    // /proc is the sandbox's own: a handful of processes, its own (used) token only, nothing of the server.
    expect(seen('all-environ')).not.toContain(victimToken);
    expect(all).not.toContain(SERVER_SECRET);
    const processCount = Number(/\\n(\d+)\\n@@end all-environ/.exec(seen('all-environ'))?.[1]);
    expect(processCount).toBeGreaterThan(0);
    expect(processCount).toBeLessThan(12);
    // The database: no loopback port speaks DynamoDB, the socket is not there.
    const db = seen('db-calls');
    expect(db).not.toContain('TableNames');
    for (const path of socketPaths())
      expect(db).toMatch(new RegExp(`socketPath\\W+${path}\\W+ListTables error ENOENT`));
    // Every port this process listens on was tried, and answered as something else (or not at all).
    for (const port of ports) expect(db).toMatch(new RegExp(`${port}\\} ListTables (\\d+|error)`));

    // Nothing was written on the host side.
    expect((await stack.services.apiKeys.list('mallory')).length).toBe(0);
    expect(readFileSync(join(dataDir, 'dev-api-key'), 'utf8').trim()).toBe(stack.devKey);

    // Ordinary work in the workspace did succeed, and is there on the host.
    const ordinary = seen('ordinary');
    expect(ordinary).toContain('@@end ordinary rc=0');
    expect(ordinary).toContain('greetings from app');
    expect(ordinary).toContain('node 42');
    expect(ordinary).toContain('add hello');
    expect(ordinary).toContain('tmp-ok');
    const workspace = join(dataDir, 'sandboxes', task.sandbox_id!, 'workspace');
    expect(readFileSync(join(workspace, 'app', 'hello.sh'), 'utf8')).toContain('greetings from');
    expect(existsSync(join(workspace, 'app', '.git'))).toBe(true);
    expect((await stack.call('GET', `/api/v1/sandboxes?id=${task.sandbox_id}`)).body[0]).toMatchObject({
      contained: true,
    });
    // /tmp was private: the host's /tmp has no such file from this sandbox.
    expect(existsSync(SCRATCH)).toBe(false);
  }, 120_000);
});
