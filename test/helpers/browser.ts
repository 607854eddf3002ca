import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type BrowserContext, type Page } from 'playwright-core';

/** Debian's Chromium (`.ci/run` installs it); playwright cannot download browsers here. */
export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
/** Where browser tests keep their screenshots (gitignored). */
export const ARTIFACTS = new URL('../../test-artifacts/', import.meta.url).pathname;

export interface Browser {
  context: BrowserContext;
  page: Page;
  /** A full-page screenshot under test-artifacts/<name>.png. */
  shot(name: string): Promise<void>;
  close(): Promise<void>;
}

/**
 * A headless Chromium with a fresh profile (the launch flags of docs: shared/TOOLCHAIN.md). `args` adds
 * flags (test/helpers/https-hosts.ts's host mapping); `ignoreHTTPSErrors` accepts a test's self-signed certificate.
 */
export async function launchBrowser(
  suite: string,
  options: { args?: string[]; ignoreHTTPSErrors?: boolean } = {},
): Promise<Browser> {
  const profile = mkdtempSync(join(tmpdir(), 'acs-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    viewport: { width: 1280, height: 900 },
    ...(options.ignoreHTTPSErrors ? { ignoreHTTPSErrors: true } : {}),
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      ...(options.args ?? []),
    ],
  });
  const page = context.pages()[0] ?? (await context.newPage());
  const dir = join(ARTIFACTS, suite);
  mkdirSync(dir, { recursive: true });
  return {
    context,
    page,
    shot: async (name) => {
      await page.screenshot({ path: join(dir, `${name}.png`), fullPage: true });
    },
    close: async () => {
      await context.close();
      rmSync(profile, { recursive: true, force: true });
    },
  };
}
