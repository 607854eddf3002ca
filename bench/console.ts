import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium } from 'playwright-core';
import { buildConsole } from '#infra/console-build.ts';
import { startLocalStack } from '#infra/local/stack.ts';
import { CHROMIUM } from '#test/helpers/browser.ts';
import { count, p50p99 } from './stats.ts';

const LOADS = 10;

/**
 * The web console: its built size, and how soon a fresh browser (Chromium, new profile and cache each
 * time) paints it from `npm start`'s stack: first contentful paint of `/`, and the time until the page
 * a person works on is there (the sign-in form; signed in, the conversation list loaded).
 */
export async function benchConsole(): Promise<string> {
  const manifest = buildConsole();
  const dataDir = mkdtempSync(join(tmpdir(), 'acs-bench-console-'));
  const stack = await startLocalStack({ port: 0, host: '127.0.0.1', dataDir, memory: true });
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
  const signIn = await fetch(`${stack.url}/api/authenticate`, {
    method: 'POST',
    headers: { 'x-session-api-key': stack.devKey },
  });
  const cookie = /^([^=]+)=([^;]+)/.exec(signIn.headers.get('set-cookie') ?? '')!;
  const fcp: number[] = [];
  const signInReady: number[] = [];
  const listReady: number[] = [];
  try {
    for (let i = 0; i < LOADS; i++) {
      for (const signedIn of [false, true]) {
        const context = await browser.newContext();
        if (signedIn) await context.addCookies([{ name: cookie[1]!, value: cookie[2]!, url: stack.url }]);
        const page = await context.newPage();
        await page.goto(stack.url);
        await (signedIn ? page.getByRole('heading', { name: 'Conversations' }) : page.getByLabel('API key')).waitFor();
        if (signedIn) await page.getByText('No conversations yet.').waitFor();
        const ready = await page.evaluate(() => performance.now());
        if (signedIn) listReady.push(ready);
        else {
          signInReady.push(ready);
          fcp.push(
            await page.evaluate(() => performance.getEntriesByName('first-contentful-paint')[0]?.startTime ?? NaN),
          );
        }
        await context.close();
      }
    }
  } finally {
    await browser.close();
    await stack.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
  return [
    '## Web console',
    '',
    `The console (\`console/\`, built by \`infra/console-build.ts\`): ${count(manifest.scriptBytes / 1024)} KB of JavaScript, ${count(manifest.scriptGzipBytes / 1024)} KB gzipped (the bound is 200 KB). Loaded ${LOADS} times from the local stack by headless Chromium, each time with a new context (empty cache), times from the start of the navigation:`,
    '',
    '| what | p50 / p99 |',
    '|---|---|',
    `| first contentful paint of \`/\` | ${p50p99(fcp, 0)} |`,
    `| the sign-in form ready | ${p50p99(signInReady, 0)} |`,
    `| signed in: the conversation list loaded | ${p50p99(listReady, 0)} |`,
    '',
  ].join('\n');
}
