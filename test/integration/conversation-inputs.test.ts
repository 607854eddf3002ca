import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { allEvents, startConversation, waitForExecutionStatus } from '#test/helpers/conversations.ts';
import { startGitServer, type GitServer } from '#test/helpers/git-server.ts';
import { startAgentStack, type AgentStack } from '#test/helpers/agent-stack.ts';
import { reply, type ScriptedLlm } from '#test/helpers/scripted-llm.ts';
import type { TestStack } from '#test/helpers/stack.ts';

let agent: AgentStack;
let stack: TestStack;
let llm: ScriptedLlm;
let git: GitServer;
const TOKEN = 'glpat_inputs_token';
// A contained sandbox sees neither the checkout nor node_modules: the server is a dependency-free
// script run with `node -e` (the agent-session test runs the MCP SDK's own server, uncontained).
const MCP_SERVER = readFileSync(new URL('../fixtures/agent/mcp-reverse-server.mjs', import.meta.url), 'utf8');

beforeAll(async () => {
  git = await startGitServer(TOKEN, 'oauth2');
  git.createRepo('team/service', { 'README.md': '# service\n' });
  agent = await startAgentStack({
    settings: {
      secrets_store: { provider_tokens: { gitlab: { token: TOKEN, host: git.url } } },
      mcp_config: { stdio_servers: [{ name: 'fromsettings', command: process.execPath, args: ['-e', MCP_SERVER] }] },
    },
  });
  ({ stack, llm } = agent);
});
afterAll(async () => {
  await agent?.stop();
  await git?.close();
});

const workspaceOf = (sandboxId: string) => join(stack.dataDir, 'sandboxes', sandboxId, 'workspace');
const lastRequestText = () => JSON.stringify(llm.requests.at(-1)?.body ?? {});

describe('every creation input of the spec', () => {
  it('legacy initial_user_msg + image_urls: the model gets the text and the image', async () => {
    llm.enqueue(reply.finish('seen'));
    const res = await stack.call('POST', '/api/conversations', {
      body: { initial_user_msg: 'Describe this picture', image_urls: ['https://images.example.test/cat.png'] },
    });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      status: 'ok',
      conversation_id: expect.stringMatching(/^[0-9a-f]{32}$/),
      message: null,
      conversation_status: 'STARTING',
    });
    await waitForExecutionStatus(stack, res.body.conversation_id, ['finished']);
    const sent = lastRequestText();
    expect(sent).toContain('Describe this picture');
    expect(sent).toContain('https://images.example.test/cat.png');
  });

  it('conversation_id chosen by the client, and a taken one is a 409', async () => {
    llm.enqueue(reply.finish('ok'));
    const id = 'c0ffee00c0ffee00c0ffee00c0ffee00';
    const first = await stack.call('POST', '/api/conversations', {
      body: { conversation_id: id, initial_user_msg: 'first' },
    });
    expect(first.body.conversation_id).toBe(id);
    const again = await stack.call('POST', '/api/conversations', { body: { conversation_id: id } });
    expect(again.status).toBe(409);
    expect(again.body).toMatchObject({ status: 'error', msg_id: 'CONVERSATION$ALREADY_EXISTS' });
    await waitForExecutionStatus(stack, id, ['finished']);
  });

  it('conversation_instructions reach the system prompt; mcp_config merges with the settings, its secrets sealed and masked', async () => {
    const ENV_SECRET = 'mcp-env-secret-4411';
    const KEY_SECRET = 'mcp-sse-key-secret-8822';
    llm.enqueue(reply.tool('fromrequest_reverse_text', { text: 'abc' }), reply.finish('done'));
    const res = await stack.call('POST', '/api/v1/app-conversations', {
      body: {
        conversation_instructions: 'Always answer in haiku.',
        mcp_config: {
          stdio_servers: [
            { name: 'fromrequest', command: process.execPath, args: ['-e', MCP_SERVER], env: { GREETING: ENV_SECRET } },
          ],
          sse_servers: [{ url: 'http://127.0.0.1:9/sse', api_key: KEY_SECRET }],
        },
        initial_message: { content: [{ type: 'text', text: 'hello' }] },
      },
    });
    expect(res.status).toBe(200);
    expect(res.body.request.mcp_config.sse_servers[0]).toEqual({
      url: 'http://127.0.0.1:9/sse',
      api_key: null,
      api_key_set: true,
    });
    expect(res.body.request.mcp_config.stdio_servers[0]).toMatchObject({ env: { GREETING: null }, env_set: true });
    const task = await waitForExecutionStatus(stack, res.body.app_conversation_id, ['finished']).then(
      async () => (await stack.call('GET', `/api/v1/app-conversations/start-tasks?ids=${res.body.id}`)).body[0],
    );
    expect(task.status).toBe('READY');
    const searched = await stack.call(
      'GET',
      `/api/v1/app-conversations/start-tasks/search?conversation_id__eq=${task.app_conversation_id}`,
    );
    for (const text of [res.text, JSON.stringify(task), searched.text]) {
      expect(text).not.toContain(ENV_SECRET);
      expect(text).not.toContain(KEY_SECRET);
    }
    expect(searched.body.items[0].request.mcp_config.sse_servers[0].api_key_set).toBe(true);
    // The sandbox got the sealed value back through the start-config bridge route: the MCP server saw it.
    expect(JSON.stringify(llm.requests.at(-1)!.body)).toContain(`GREETING=${ENV_SECRET}`);
    // ... and the events that show the tool's output mask it.
    const events = JSON.stringify(await allEvents(stack, task.app_conversation_id));
    expect(events).toContain('cba');
    expect(events).not.toContain(ENV_SECRET);
    const body = llm.requests.at(-2)!.body;
    expect(JSON.stringify(body.messages[0])).toContain('Always answer in haiku.');
    const tools = (body.tools ?? []).map((t: { function: { name: string } }) => t.function.name);
    // Both servers run the same fixture: the second one's tools are prefixed with its name.
    expect(tools).toEqual(expect.arrayContaining(['reverse_text', 'fromrequest_reverse_text']));
  });

  it('suggested_task: the repository is cloned and the first message names the issue', async () => {
    llm.enqueue(reply.finish('fixed'));
    const task = await startConversation(stack, {
      suggested_task: { repo: 'team/service', issue_number: 17, title: 'Crash on empty input', git_provider: 'gitlab' },
    });
    expect(task.status).toBe('READY');
    await waitForExecutionStatus(stack, task.app_conversation_id, ['finished']);
    expect(existsSync(join(workspaceOf(task.sandbox_id!), 'service', 'README.md'))).toBe(true);
    const sent = lastRequestText();
    expect(sent).toContain('#17');
    expect(sent).toContain('Crash on empty input');
  });

  it('create_microagent: the agent is asked for a microagent file and writes it', async () => {
    llm.enqueue(
      reply.tool('str_replace_editor', {
        command: 'create',
        path: '.openhands/microagents/repo.md',
        file_text: '# service\nRun the tests with make test.\n',
      }),
      reply.finish('written'),
    );
    const task = await startConversation(stack, {
      create_microagent: { repo: 'team/service', git_provider: 'gitlab' },
    });
    expect(task.status).toBe('READY');
    await waitForExecutionStatus(stack, task.app_conversation_id, ['finished']);
    expect(JSON.stringify(llm.requests.at(-2)!.body)).toContain('.openhands/microagents/');
    expect(
      readFileSync(join(workspaceOf(task.sandbox_id!), 'service', '.openhands', 'microagents', 'repo.md'), 'utf8'),
    ).toContain('make test');
  });

  it('replay_json: the recorded actions run again in order without the LLM, then the agent continues', async () => {
    const trajectory = [
      { action: 'run', source: 'agent', args: { command: 'echo replayed > replayed.txt' } },
      { action: 'message', source: 'agent', args: { content: 'replayed the step' } },
    ];
    const calls = llm.requests.length;
    llm.enqueue(reply.finish('continued after the replay'));
    const res = await stack.call('POST', '/api/conversations', { body: { replay_json: JSON.stringify(trajectory) } });
    expect(res.status).toBe(200);
    const conv = await waitForExecutionStatus(stack, res.body.conversation_id, ['finished', 'error']);
    expect(conv.execution_status).toBe('finished');
    expect(readFileSync(join(workspaceOf(conv.sandbox_id!), 'replayed.txt'), 'utf8').trim()).toBe('replayed');
    expect(llm.requests.length).toBe(calls + 1);
    const events = await allEvents(stack, res.body.conversation_id);
    expect(events.some((e) => e.kind === 'ObservationEvent' && JSON.stringify(e).includes('replayed'))).toBe(true);
  });
});

describe('legacy errors', () => {
  it('400 CONFIGURATION$SETTINGS_NOT_FOUND without settings, 400 STATUS$ERROR_LLM_AUTHENTICATION without an LLM key', async () => {
    const key = await stack.newUser('nosettings');
    const none = await stack.call('POST', '/api/conversations', { key, body: {} });
    expect(none.status).toBe(400);
    expect(none.body).toMatchObject({ status: 'error', msg_id: 'CONFIGURATION$SETTINGS_NOT_FOUND' });
    await stack.call('POST', '/api/settings', { key, body: { llm_model: 'm' } });
    const nokey = await stack.call('POST', '/api/conversations', { key, body: {} });
    expect(nokey.status).toBe(400);
    expect(nokey.body).toMatchObject({ status: 'error', msg_id: 'STATUS$ERROR_LLM_AUTHENTICATION' });
  });

  it('422 for unknown fields and bad types, naming them', async () => {
    const res = await stack.call('POST', '/api/conversations', {
      body: { repository: 'a/b', bogus: 1, git_provider: 'myspace' },
    });
    expect(res.status).toBe(422);
    const locs = res.body.detail.map((d: { loc: string[] }) => d.loc.join('.'));
    expect(locs).toEqual(expect.arrayContaining(['body.git_provider']));
    expect(JSON.stringify(res.body)).toContain('bogus');
  });
});
