import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  CLOUD_BACKEND,
  driveCanvas,
  failedCanvasCalls,
  loadInNewTab,
  reserveCanvasOrigin,
  startAgentCanvas,
  type AgentCanvas,
  type CanvasSession,
} from '#test/helpers/agent-canvas.ts';
import { CHROMIUM, launchBrowser, type Browser } from '#test/helpers/browser.ts';
import { reply, startScriptedLlm, type ScriptedLlm } from '#test/helpers/scripted-llm.ts';
import { startServerProcess, type ServerProcess } from '#test/helpers/server-process.ts';
import { apiCaller, type ApiCall } from '#test/helpers/stack.ts';
import { waitFor } from '#test/helpers/wait.ts';

/**
 * Agent Canvas itself (`@openhands/agent-canvas` 1.20.0, `agent-canvas --frontend-only`, its own build)
 * in Debian's Chromium against `npm start` as a child process, with the scripted LLM: its cloud mode
 * through its main screens, and its local mode on one conversation's `conversation_url` and key.
 * The page reaches nothing but loopback (every other request is aborted: Canvas asks Google Fonts and
 * the npm registry). Screenshots go to test-artifacts/agent-canvas/.
 */
declare const localStorage: { getItem(k: string): string | null; setItem(k: string, v: string): void };

let llm: ScriptedLlm;
let server: ServerProcess;
let canvas: AgentCanvas;
let browser: Browser;
let page: Page;
let dataDir: string;
let api: ApiCall;
let canvasPage: CanvasSession;
/** What Canvas's page asked of the API and what it answered, `STATUS METHOD path`. */
let calls: string[] = [];
/** The conversation the cloud tests open; the one the local mode opens. */
let opened = '';
/** The organization of the API's key (Canvas's links carry it). */
let org = '';

/** The agent server's own services Canvas's local mode asks for, which this API does not serve (docs/openhands-clients.md). */
const LOCAL_NOT_SERVED = [
  ' /api/llm/models/verified',
  ' /api/file/',
  ' /api/profiles',
  ' /api/agent-profiles', // the user's, not a conversation key's (403)
  ' /api/skills',
  ' /api/canvas-extensions/',
  ' /api/workspaces',
  ' /api/bash/',
  ' /api/auth/workspace-session',
  'PATCH /api/settings', // a conversation key writes no settings (405)
];
const LOCAL = 'acs-local';

/** The conversation's record as the V1 API shows it (its status, sandbox, key). */
const v1 = async (id: string) => (await api('GET', `/api/v1/app-conversations?ids=${id}`)).body[0];

async function startConversation(text: string, title: string): Promise<string> {
  const started = await api('POST', '/api/v1/app-conversations', {
    body: { initial_message: { content: [{ type: 'text', text }] }, title },
  });
  expect(started.status).toBe(200);
  const task = await waitFor(
    'the start task',
    async () => (await api('GET', `/api/v1/app-conversations/start-tasks?ids=${started.body.id}`)).body[0],
    { until: (t) => t.status === 'READY' || t.status === 'ERROR', timeoutMs: 60_000 },
  );
  expect(task.status).toBe('READY');
  return task.app_conversation_id;
}

const untilStatus = (id: string, statuses: string[]) =>
  waitFor(`${id} ${statuses.join('|')}`, () => v1(id), {
    until: (c) => statuses.includes(c?.execution_status),
    timeoutMs: 60_000,
  });

const open = (path: string, backend?: string) => canvasPage.open(path, backend);
const send = (text: string) => canvasPage.send(text);

beforeAll(async () => {
  if (!existsSync(CHROMIUM)) throw new Error(`No Chromium at ${CHROMIUM}: apt-get install chromium (.ci/run does)`);
  llm = await startScriptedLlm();
  const ports = await reserveCanvasOrigin();
  dataDir = mkdtempSync(join(tmpdir(), 'acs-canvas-e2e-'));
  // The API allows Canvas's origin (CORS), as docs/openhands-clients.md tells a user to.
  // The API first (its start has a deadline of its own), then Canvas and the browser together; all
  // settled before a failure is thrown, so afterAll stops whatever did start.
  server = await startServerProcess(dataDir, ['--memory'], { CORS_ORIGINS: ports.origin });
  const started = await Promise.allSettled([
    startAgentCanvas(ports).then((c) => (canvas = c)),
    launchBrowser('agent-canvas').then((b) => (browser = b)),
  ]);
  for (const result of started) if (result.status === 'rejected') throw result.reason;
  page = browser.page;
  api = apiCaller(server.url, server.key);
  expect(
    (
      await api('POST', '/api/settings', {
        body: { llm_model: 'openai/m', llm_api_key: 'sk-e2e', llm_base_url: llm.baseUrl },
      })
    ).status,
  ).toBe(200);
  // The API as Canvas's cloud backend with the user's key; the local one is added in its test.
  org = (await api('GET', '/api/organizations')).body.current_org_id;
  canvasPage = await driveCanvas(browser, {
    canvasOrigin: canvas.origin,
    apiOrigin: server.url,
    key: server.key,
    org,
    reachable: (url) => /^(127\.0\.0\.1|localhost)$/.test(url.hostname),
  });
  calls = canvasPage.calls;
}, 120_000);

afterEach(async (context) => {
  if (context.task.result?.state === 'fail') await browser?.shot(`failed-${context.task.name.slice(0, 40)}`);
});

afterAll(async () => {
  await browser?.close();
  await canvas?.close();
  await server?.interrupt();
  await llm?.close();
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
});

describe('Agent Canvas 1.20 in Chromium, cloud mode (this API as its backend)', { timeout: 120_000 }, () => {
  it('connects (its health check), lists the conversations, and shows its settings from this API', async () => {
    llm.enqueue(reply.finish('Hello from the seeded conversation'));
    opened = await startConversation('say hello', 'Seeded by the API');
    await open('/');
    // First visit: its onboarding; a person skips it.
    await page.getByText('Skip for now').click();
    await page.getByText('Seeded by the API').first().waitFor();
    await browser.shot('01-home-connected');
    expect(calls).toContain('200 GET /api/keys/current');
    // The settings: its Verification page is built from this API's conversation schema.
    await open('/settings/verification');
    await page.getByText('Confirmation mode').first().waitFor();
    await browser.shot('02-settings-verification');
    await open('/settings/llm');
    await page.getByText('No profiles saved yet').waitFor();
    await browser.shot('03-settings-llm');
    expect(failedCalls()).toEqual([]);
  });

  it('opens a conversation: its history, then a message from the composer reaches the agent and its command, file edit and answer appear live', async () => {
    await open('/');
    await page.getByText('Seeded by the API').first().click();
    await page.waitForURL(new RegExp(`/conversations/${opened}`));
    await page.getByText('Hello from the seeded conversation').waitFor();
    llm.enqueue(
      reply.bash('echo canvas-$((6*7))'),
      reply.tool('str_replace_editor', { command: 'create', path: 'notes.md', file_text: '# Notes\n' }),
      reply.finish('The notes are written'),
    );
    const before = llm.requests.length;
    await send('write the notes');
    await page.getByText('The notes are written').waitFor();
    // The message went over Canvas's event socket to the agent, which the model saw.
    expect(JSON.stringify(llm.requests[before]!.body)).toContain('write the notes');
    await browser.shot('04-conversation-live');
    // The file edit, and the command whose output unfolds under it.
    await page.getByText('Wrote to').first().waitFor();
    // Its chevron unfolds the command's output.
    await page
      .locator('div', { hasText: /^Ran echo canvas-\$\(\(6\*7\)\)$/ })
      .last()
      .locator('svg')
      .last()
      .click();
    await page.getByText('canvas-42').first().waitFor();
    await browser.shot('05-conversation-actions');
    expect(failedCalls()).toEqual([]);
  });

  it('pauses the running agent (its sandbox) and resumes it', async () => {
    llm.enqueue(reply.bash('sleep 15 && echo slept'), reply.finish('Resumed and finished'));
    await send('take your time');
    const stop = page.getByTestId('stop-button');
    await stop.waitFor();
    await browser.shot('06-running');
    await stop.click();
    const sandbox = (await v1(opened)).sandbox_id as string;
    await waitFor(
      'the sandbox paused',
      async () => (await api('GET', `/api/v1/sandboxes?id=${sandbox}`)).body[0]?.status,
      {
        until: (s) => s === 'PAUSED',
        timeoutMs: 30_000,
      },
    );
    await browser.shot('07-paused');
    await page.getByTestId('play-button').click();
    await page.getByText('Resumed and finished').waitFor({ timeout: 60_000 });
    await browser.shot('08-resumed');
    expect(failedCalls()).toEqual([]);
  });

  it("a conversation's URL loaded in a new tab shows its history, then its socket; the settings load in full after it", async () => {
    // The link Canvas makes for a new tab (`?backend=&org=`). Not `?backend=` alone: Canvas then picks the
    // organization after the page mounted and leaves the pane empty (docs/openhands-clients.md).
    const lines = await loadInNewTab(
      browser,
      `${canvas.origin}/conversations/${opened}?backend=${CLOUD_BACKEND}&org=${org}`,
      server.url,
      'Resumed and finished',
    );
    expect(lines.some((l) => l.includes(`<- 200 GET /api/v1/conversation/${opened}/events/search`))).toBe(true);
    // A full load in the tab whose conversation socket is live.
    await open('/settings/verification');
    await page.getByText('Confirmation mode').first().waitFor();
    expect(failedCalls()).toEqual([]);
  });

  it('starts a new conversation from the home composer, and the answer appears', async () => {
    llm.enqueue(reply.finish('A fresh answer'));
    await open('/');
    await send('start something new');
    await page.waitForURL(/\/conversations\/[0-9a-f]{32}/, { timeout: 60_000 });
    await page.getByText('A fresh answer').waitFor({ timeout: 60_000 });
    await browser.shot('09-new-conversation');
    expect(calls).toContain('200 POST /api/v1/app-conversations');
    expect(failedCalls()).toEqual([]);
  });
});

describe("Agent Canvas 1.20, local mode: a conversation's conversation_url origin and its key", {
  timeout: 120_000,
}, () => {
  it('connects with the conversation key, renders the conversation, and answers its confirmation', async () => {
    // Confirmation mode on for this conversation's start, so its command waits for the person.
    await api('POST', '/api/settings', { body: { confirmation_mode: true } });
    llm.enqueue(reply.bash('echo confirmed-$((40+2))'), reply.finish('Ran it after the confirmation'));
    const id = await startConversation('run the command', 'Needs a confirmation');
    await api('POST', '/api/settings', { body: { confirmation_mode: false } });
    await untilStatus(id, ['waiting_for_confirmation']);
    const view = await v1(id);
    const host = new URL(view.conversation_url).origin;
    const key = view.session_api_key as string;
    await page.evaluate(
      ({ host, key }) => {
        const list = JSON.parse(localStorage.getItem('openhands-backends') ?? '[]');
        list.push({ id: 'acs-local', name: 'ACS conversation', host, apiKey: key, kind: 'local' });
        localStorage.setItem('openhands-backends', JSON.stringify(list));
      },
      { host, key },
    );
    const mark = calls.length;
    await open(`/conversations/${id}`, LOCAL);
    await page.getByText('run the command').first().waitFor();
    await page.getByText('Do you want to continue with this action?').waitFor();
    // The conversation key's settings view declines Canvas's analytics: no consent dialog over the page.
    expect(await page.getByTestId('telemetry-consent-form').count()).toBe(0);
    await browser.shot('10-local-mode');
    await page.getByText(/^Continue/).click();
    await page.getByText('Ran it after the confirmation').waitFor({ timeout: 60_000 });
    await browser.shot('11-local-confirmed');
    const local = calls.slice(mark);
    expect(local).toContain('200 GET /api/settings');
    expect(local).toContain('200 GET /server_info');
    expect(local.some((c) => c.startsWith('200 POST') && c.endsWith('/events/respond_to_confirmation'))).toBe(true);
    // Beyond the conversation, Canvas's local mode reads the agent server's own services (LLM profiles,
    // skills, workspaces, its bash API...): not served (docs/openhands-clients.md), none of them needed to render.
    expect(failedCalls(local).filter((c) => !LOCAL_NOT_SERVED.some((p) => c.includes(p)))).toEqual([]);
  });
});

/** Calls the page made that this API failed, apart from what docs/openhands-clients.md lists as not served. */
const failedCalls = (from = calls): string[] => failedCanvasCalls(from);
