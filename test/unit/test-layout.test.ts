import { readdirSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

const unitDir = new URL('./', import.meta.url).pathname;

/** What starts a server or a stack: a test that does belongs in integration/, not unit/ (README's map). */
const SERVERS = [
  /startTestStack|startLocalStack|startScriptedLlm|startAgentStack|startServerProcess/,
  /\bcreateServer\(/,
  /new WebSocketServer\(/,
  /\.listen\(/,
];

describe('the test folders keep their promise', () => {
  it('unit/ starts no server (no network): such a test lives in integration/', () => {
    const offenders = readdirSync(unitDir)
      .filter((f) => f.endsWith('.ts') && f !== 'test-layout.test.ts')
      .flatMap((f) => {
        const source = readFileSync(`${unitDir}${f}`, 'utf8');
        return SERVERS.filter((re) => re.test(source)).map((re) => `${f}: ${re.source}`);
      });
    expect(offenders).toEqual([]);
  });
});
