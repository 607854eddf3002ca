import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { allEvents, conversation, startConversation, waitForExecutionStatus } from '#test/helpers/conversations.ts';
import { startGitServer, type GitServer } from '#test/helpers/git-server.ts';
import { startAgentStack, type AgentStack } from '#test/helpers/agent-stack.ts';
import { reply, type ScriptedLlm } from '#test/helpers/scripted-llm.ts';
import type { TestStack } from '#test/helpers/stack.ts';

let agent: AgentStack;
let stack: TestStack;
let llm: ScriptedLlm;
let git: GitServer;
const TOKEN = 'ghp_conversation_token_123';

beforeAll(async () => {
  git = await startGitServer(TOKEN);
  git.createRepo(
    'acme/app',
    {
      'README.md': '# app\n',
      '.openhands/setup.sh': 'echo setup-ran > setup-output.txt\n',
      '.openhands/pre-commit.sh': 'exit 0\n',
    },
    { feature: { 'feature.txt': 'on the feature branch\n' } },
  );
  agent = await startAgentStack({
    settings: {
      git_user_name: 'Ada Lovelace',
      git_user_email: 'ada@example.test',
      secrets_store: {
        provider_tokens: { github: { token: TOKEN, host: git.url } },
        custom_secrets: { DEPLOY_TOKEN: 'custom-secret-value-42' },
      },
    },
  });
  ({ stack, llm } = agent);
});
afterAll(async () => {
  await agent?.stop();
  await git?.close();
});

const workspaceOf = (sandboxId: string) => join(stack.dataDir, 'sandboxes', sandboxId, 'workspace');
const text = (t: string) => ({ role: 'user', content: [{ type: 'text', text: t }], run: true });

describe('a conversation end to end', () => {
  it('runs a shell command, writes a file and finishes, with its events visible through the API', async () => {
    llm.enqueue(
      reply.bash('echo hello from the agent && echo "$DEPLOY_TOKEN" | wc -c'),
      reply.tool('str_replace_editor', {
        command: 'create',
        path: 'notes/result.txt',
        file_text: 'written by the agent\n',
      }),
      reply.bash('git add -A && git commit -qm "agent commit" && git log -1 --format=%an'),
      reply.finish('All done.'),
    );
    const task = await startConversation(stack, { initial_message: text('Say hello and write notes/result.txt') });
    expect(task.status).toBe('READY');
    const conv = await waitForExecutionStatus(stack, task.app_conversation_id, ['finished', 'error']);
    expect(conv.execution_status).toBe('finished');
    expect(conv.sandbox_status).toBe('RUNNING');
    expect(conv.metrics!.prompt_tokens).toBeGreaterThan(0);
    expect(conv.conversation_url).toBe(`${stack.url}/api/conversations/${task.app_conversation_id}`);

    const events = await allEvents(stack, task.app_conversation_id);
    const kinds = events.map((e) => e.kind);
    expect(kinds).toContain('MessageEvent');
    expect(kinds.filter((k) => k === 'ActionEvent').length).toBeGreaterThanOrEqual(4);
    expect(kinds.filter((k) => k === 'ObservationEvent').length).toBeGreaterThanOrEqual(3);
    expect(new Set(events.map((e) => e.id)).size).toBe(events.length);
    const observations = JSON.stringify(events.filter((e) => e.kind === 'ObservationEvent'));
    expect(observations).toContain('hello from the agent');
    expect(observations).toContain('Ada Lovelace'); // git identity from the settings
    expect(JSON.stringify(events)).not.toContain('custom-secret-value-42');
    expect(readFileSync(join(workspaceOf(task.sandbox_id!), 'notes', 'result.txt'), 'utf8')).toBe(
      'written by the agent\n',
    );

    // The count agrees, and kind filters work.
    expect((await stack.call('GET', `/api/v1/events/count?conversation_id__eq=${task.app_conversation_id}`)).body).toBe(
      events.length,
    );
    const actions = await stack.call(
      'GET',
      `/api/v1/events/search?conversation_id__eq=${task.app_conversation_id}&kind__eq=ActionEvent`,
    );
    expect(actions.body.items.every((e: { kind: string }) => e.kind === 'ActionEvent')).toBe(true);
  });

  it('clones the repository and branch with the provider token, runs setup.sh and installs the pre-commit hook', async () => {
    const before = git.authHeaders.length;
    llm.enqueue(reply.bash('cat feature.txt setup-output.txt'), reply.finish('read it'));
    const task = await startConversation(stack, {
      selected_repository: 'acme/app',
      git_provider: 'github',
      selected_branch: 'feature',
      initial_message: text('Read the files'),
    });
    expect(task.status).toBe('READY');
    const repoDir = join(workspaceOf(task.sandbox_id!), 'app');
    expect(readFileSync(join(repoDir, 'feature.txt'), 'utf8')).toBe('on the feature branch\n');
    expect(readFileSync(join(repoDir, 'setup-output.txt'), 'utf8').trim()).toBe('setup-ran');
    expect(existsSync(join(repoDir, '.git', 'hooks', 'pre-commit'))).toBe(true);
    expect(readFileSync(join(repoDir, '.git', 'config'), 'utf8')).not.toContain(TOKEN);
    expect(git.authHeaders.slice(before)).toContain(
      `Basic ${Buffer.from(`x-access-token:${TOKEN}`).toString('base64')}`,
    );
    await waitForExecutionStatus(stack, task.app_conversation_id, ['finished']);
    const conv = (await conversation(stack, task.app_conversation_id))!;
    expect(conv).toMatchObject({ selected_repository: 'acme/app', selected_branch: 'feature', git_provider: 'github' });
  });

  it('fails the start task with a detail a person can act on when the clone fails', async () => {
    const task = await startConversation(stack, {
      selected_repository: 'acme/does-not-exist',
      git_provider: 'github',
      initial_message: text('x'),
    });
    expect(task.status).toBe('ERROR');
    expect(task.detail).toContain('Could not clone acme/does-not-exist');
    expect(task.detail).not.toContain(TOKEN);
  });

  it('lists, searches, counts and batch-gets conversations, newest first, per user', async () => {
    const list = await stack.call('GET', '/api/v1/app-conversations?limit=2');
    expect(list.status).toBe(200);
    expect(list.body.items).toHaveLength(2);
    expect(list.body.next_page_id).toBeTypeOf('string');
    const ts = list.body.items.map((c: { created_at: string }) => c.created_at);
    expect([...ts].sort().reverse()).toEqual(ts);
    const count = (await stack.call('GET', '/api/v1/app-conversations/count')).body;
    expect(count).toBeGreaterThanOrEqual(3);
    // The unfiltered count is the user's counter item; it agrees with the list, and the item never shows.
    expect((await stack.call('GET', '/api/v1/app-conversations/search?limit=100')).body.items).toHaveLength(count);
    expect((await stack.call('GET', '/api/v1/app-conversations?ids=%23count')).body).toEqual([null]);
    const search = await stack.call('GET', '/api/v1/app-conversations/search?title__contains=READ%20THE');
    expect(search.body.items.map((c: { title: string }) => c.title)).toEqual(['Read the files']);
    const id = list.body.items[0].id;
    const other = await stack.newUser('someone-else');
    const mine = await stack.call('GET', `/api/v1/app-conversations?ids=${id}&ids=${'0'.repeat(32)}`);
    expect(mine.body[0].id).toBe(id);
    expect(mine.body[1]).toBeNull();
    expect((await stack.call('GET', `/api/v1/app-conversations?ids=${id}`, { key: other })).body).toEqual([null]);
    expect((await stack.call('GET', `/api/v1/events/search?conversation_id__eq=${id}`, { key: other })).status).toBe(
      404,
    );
    expect((await stack.call('POST', `/api/conversations/${id}/events`, { key: other, body: text('hi') })).status).toBe(
      404,
    );
    expect((await stack.call('GET', '/api/v1/app-conversations/search', { key: other })).body.items).toEqual([]);
    expect((await stack.call('GET', '/api/v1/app-conversations/count', { key: other })).body).toBe(0);
    expect((await stack.call('DELETE', `/api/conversations/${id}`, { key: other })).status).toBe(404);
    expect((await stack.call('GET', '/api/v1/app-conversations/count')).body).toBe(count);
    const tasks = await stack.call('GET', '/api/v1/app-conversations/start-tasks/search?limit=100');
    expect(tasks.body.items.length).toBeGreaterThanOrEqual(3);
  });
});
