import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stripVTControlCharacters } from 'node:util';
import type { Page } from 'playwright-core';
import type { Browser } from '#test/helpers/browser.ts';
import { waitFor } from '#test/helpers/wait.ts';

declare const localStorage: { getItem(k: string): string | null; setItem(k: string, v: string): void };

/**
 * Agent Canvas (`@openhands/agent-canvas`, installed as a dev dependency) as its users run it against
 * a remote backend: `agent-canvas --frontend-only`, its static build behind its own ingress, on Node 20
 * (it declares Node >= 24; the frontend-only launcher runs on 20). Its state directory is a temporary
 * one and its telemetry is off (the page would otherwise call PostHog on the internet).
 */
export interface AgentCanvas {
  /** The origin Canvas is served from, e.g. `http://127.0.0.1:PORT` (give it to CORS_ORIGINS). */
  origin: string;
  output(): string;
  close(): Promise<void>;
}

const BIN = new URL('../../node_modules/@openhands/agent-canvas/bin/agent-canvas.mjs', import.meta.url).pathname;

/** A port free on 127.0.0.1 now (the launcher takes fixed ports and checks they are free). */
export async function freePort(): Promise<number> {
  const server = createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as { port: number };
  server.close();
  await once(server, 'close');
  return port;
}

/** Canvas's origin is chosen before it starts, so the API can be started with it in CORS_ORIGINS. */
export async function reserveCanvasOrigin(): Promise<{ origin: string; port: number; staticPort: number }> {
  const port = await freePort();
  let staticPort = await freePort();
  while (staticPort === port) staticPort = await freePort();
  return { origin: `http://127.0.0.1:${port}`, port, staticPort };
}

/** Starts `agent-canvas --frontend-only --port <port>` and resolves once its ingress serves the page. */
export async function startAgentCanvas(ports: { port: number; staticPort: number }): Promise<AgentCanvas> {
  const state = mkdtempSync(join(tmpdir(), 'acs-canvas-state-'));
  const child: ChildProcess = spawn(process.execPath, [BIN, '--frontend-only', '--port', String(ports.port)], {
    env: {
      ...process.env,
      OH_CANVAS_SAFE_VITE_PORT: String(ports.staticPort),
      OH_CANVAS_SAFE_STATE_DIR: state,
      AGENT_CANVAS_DISABLE_TELEMETRY: '1',
      NO_COLOR: '1',
      FORCE_COLOR: '0',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true, // its own process group: the launcher's children (static server, ingress) end with it
  });
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
  const close = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      const exited = once(child, 'exit');
      try {
        process.kill(-child.pid!, 'SIGTERM');
      } catch {
        // already gone
      }
      const timer = setTimeout(() => {
        try {
          process.kill(-child.pid!, 'SIGKILL');
        } catch {
          // already gone
        }
      }, 5_000);
      await exited;
      clearTimeout(timer);
    }
    rmSync(state, { recursive: true, force: true });
  };
  // Ready when its static server and its ingress both say they listen (the launcher's own banner comes
  // after a fixed delay, not after the ingress listens), then the page must answer.
  const banner = new Promise<void>((resolve, reject) => {
    const onData = () => {
      // The launcher colours its banner whatever NO_COLOR says.
      const plain = stripVTControlCharacters(out);
      if (
        plain.includes('Static-server + proxy listening on') &&
        plain.includes(`Listening on: http://localhost:${ports.port}/`)
      )
        resolve();
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.once('exit', (code) => reject(new Error(`agent-canvas exited (${code}) before it served:\n${out}`)));
  });
  const timer = setTimeout(() => void close(), 30_000);
  try {
    await banner;
  } finally {
    clearTimeout(timer);
  }
  const origin = `http://127.0.0.1:${ports.port}`;
  const page = await fetch(`${origin}/`);
  if (page.status !== 200) throw new Error(`agent-canvas: GET / answered ${page.status}:\n${out}`);
  return { origin, output: () => out, close };
}

/** The id Canvas's backend list gives this API as a cloud backend (`?backend=` selects it). */
export const CLOUD_BACKEND = 'acs-cloud';

/** Canvas's page in a browser, driven as a person does, with what it asked of the API recorded. */
export interface CanvasSession {
  page: Page;
  /** What the page asked of the API and what it answered, `STATUS METHOD path`. */
  calls: string[];
  /** Errors the page logged (resources the test blocks left out). */
  pageErrors: string[];
  /**
   * Opens Canvas on `path` with backend `backend` active, by the link Canvas itself makes for a new tab
   * (`?backend=<id>&org=<org>`, its `withBackendSelectionParams`): the cloud backend with its organization.
   */
  open(path: string, backend?: string): Promise<void>;
  /** The composer (a contenteditable), typed into and sent with Enter. */
  send(text: string): Promise<void>;
}

/**
 * Points a browser at Canvas (served at `canvasOrigin`) with this API (`apiOrigin`, what a user types as
 * the backend's host) as its cloud backend and `key` as its API key, the way Canvas's "Add backend"
 * dialog stores them (localStorage, health check `GET /api/keys/current`). Requests to any URL
 * `reachable` refuses are aborted (Canvas asks Google Fonts and the npm registry; tests reach no internet).
 * `org` is the key's organization (`current_org_id` of `GET /api/organizations`): a page loaded with the
 * cloud backend but no organization selected has Canvas pick one after its load, and a conversation page
 * mounted before that stays empty (docs/openhands-clients.md, "A conversation link without its organization").
 */
export async function driveCanvas(
  browser: Browser,
  options: { canvasOrigin: string; apiOrigin: string; key: string; org: string; reachable: (url: URL) => boolean },
): Promise<CanvasSession> {
  const { page, context } = browser;
  const calls: string[] = [];
  const pageErrors: string[] = [];
  await context.route(
    (url) => !options.reachable(url),
    (route) => route.abort(),
  );
  page.on('response', (r) => {
    if (r.url().startsWith(`${options.apiOrigin}/`))
      calls.push(`${r.status()} ${r.request().method()} ${r.url().slice(options.apiOrigin.length)}`);
  });
  page.on('console', (m) => {
    if (m.type() === 'error' && !m.text().startsWith('Failed to load resource')) pageErrors.push(m.text());
  });
  await context.addInitScript(
    ({ host, key, id }) => {
      if (localStorage.getItem('openhands-backends')) return;
      localStorage.setItem(
        'openhands-backends',
        JSON.stringify([{ id, name: 'ACS', host, apiKey: key, kind: 'cloud', authMode: 'api-key' }]),
      );
    },
    { host: options.apiOrigin, key: options.key, id: CLOUD_BACKEND },
  );
  return {
    page,
    calls,
    pageErrors,
    open: async (path, backend = CLOUD_BACKEND) => {
      const selection = new URLSearchParams({ backend, ...(backend === CLOUD_BACKEND ? { org: options.org } : {}) });
      await page.goto(`${options.canvasOrigin}${path}${path.includes('?') ? '&' : '?'}${selection}`);
    },
    send: async (text) => {
      const input = page.getByTestId('chat-input');
      await input.click();
      await input.pressSequentially(text);
      await input.press('Enter');
    },
  };
}

/**
 * Calls the page made that this API failed, apart from what docs/openhands-clients.md lists as not
 * served in cloud mode (automations, `/api/automation/*`). The workspace reads (`/files`, `/file`,
 * `/git/`) count: a running sandbox answers them, a paused one from its snapshot.
 */
export function failedCanvasCalls(calls: string[]): string[] {
  return calls.filter((c) => !/^[23]\d\d /.test(c) && !c.includes('/api/automation/'));
}

/**
 * What a page asked of `apiOrigin` and when (ms since the call): requests, their answers or failures, and
 * its WebSockets (opened, each frame sent or received, closed). Lines `+<ms> <what>`; a test prints them
 * when a wait it makes runs out, so a slow load says what it waited for.
 */
export function traceRequests(page: Page, apiOrigin: string): { lines: string[]; stop(): void } {
  const t0 = Date.now();
  const lines: string[] = [];
  const at = (what: string) => lines.push(`+${Date.now() - t0} ${what}`);
  const mine = (url: string) => url.startsWith(apiOrigin.replace(/^http/, 'ws')) || url.startsWith(apiOrigin);
  const path = (url: string) => url.replace(/^(https?|wss?):\/\/[^/]+/, '');
  const onRequest = (r: import('playwright-core').Request) => {
    if (mine(r.url())) at(`-> ${r.method()} ${path(r.url())}`);
  };
  const onResponse = (r: import('playwright-core').Response) => {
    if (mine(r.url())) at(`<- ${r.status()} ${r.request().method()} ${path(r.url())}`);
  };
  const onFailed = (r: import('playwright-core').Request) => {
    if (mine(r.url())) at(`x  ${r.method()} ${path(r.url())} ${r.failure()?.errorText}`);
  };
  const onSocket = (ws: import('playwright-core').WebSocket) => {
    if (!mine(ws.url())) return;
    const name = path(ws.url()).replace(/session_api_key=[^&]+/, 'session_api_key=…');
    at(`ws open ${name}`);
    ws.on('framesent', (f) =>
      at(
        `ws >> ${String(f.payload)
          .replace(/"session_api_key":"[^"]+"/, '"session_api_key":"…"')
          .slice(0, 80)}`,
      ),
    );
    ws.on('framereceived', (f) => at(`ws << ${String(f.payload).slice(0, 80)}`));
    ws.on('socketerror', (e) => at(`ws error ${e}`));
    ws.on('close', () => at(`ws closed ${name}`));
  };
  page.on('request', onRequest);
  page.on('response', onResponse);
  page.on('requestfailed', onFailed);
  page.on('websocket', onSocket);
  return {
    lines,
    stop: () => {
      page.off('request', onRequest);
      page.off('response', onResponse);
      page.off('requestfailed', onFailed);
      page.off('websocket', onSocket);
    },
  };
}

/**
 * Loads `url` in a new tab of the browser (empty sessionStorage, as a link opened in a new tab), waits
 * until `text` shows, then until the conversation's socket opens from the newest event on
 * (`resend_mode=since`, after its REST history); returns what the tab asked of `apiOrigin`
 * (traceRequests), and on a timeout throws with it.
 */
export async function loadInNewTab(browser: Browser, url: string, apiOrigin: string, text: string): Promise<string[]> {
  const tab = await browser.context.newPage();
  const trace = traceRequests(tab, apiOrigin);
  const failed = (e: Error) => {
    throw new Error(`${e.message}\nWhat the tab asked and got:\n${trace.lines.join('\n')}`);
  };
  try {
    await tab.goto(url);
    await tab.getByText(text).first().waitFor().catch(failed);
    await waitFor('its socket after its history', () => trace.lines.join('\n'), {
      until: (t) => /ws open \/sockets\/events\/\w+\?resend_mode=since&after_timestamp=/.test(t),
      timeoutMs: 20_000,
    }).catch(failed);
    return [...trace.lines];
  } finally {
    trace.stop();
    await tab.close();
  }
}
