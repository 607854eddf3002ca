import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { SECRET_MASK, secretMasker } from '#sandbox/agent/mask.ts';
import { secretForms, startConfigSecrets } from '#sandbox/secret-forms.ts';
import type { StartConfig } from '#shared/protocol.ts';

const secretArb = fc.string({
  unit: fc.constantFrom(...'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.~/+= '),
  minLength: 8,
  maxLength: 48,
});
const b64 = (s: string) => Buffer.from(s).toString('base64');

describe('secret masking in events catches encoded forms', () => {
  it('masks the secret inside the base64 of any longer value, at any alignment, in both alphabets', () => {
    fc.assert(
      fc.property(secretArb, fc.string({ maxLength: 12 }), fc.string({ maxLength: 12 }), (secret, before, after) => {
        const mask = secretMasker([secret]);
        const standard = b64(`${before}${secret}${after}`);
        const urlSafe = Buffer.from(`${before}${secret}${after}`).toString('base64url');
        for (const text of [standard, urlSafe]) {
          const masked = mask(`blob ${text} end`);
          expect(masked).toContain(SECRET_MASK);
          // What is left decodes to nothing that still holds the secret.
          for (const part of masked.split(SECRET_MASK))
            expect(Buffer.from(part.replace(/^blob /, ''), 'base64').toString('latin1')).not.toContain(secret);
        }
      }),
      { numRuns: 300 },
    );
  });

  it('masks plain, URL-encoded, oauth2:<token> and Basic auth header forms', () => {
    const token = 'ghp_Tok/en+with spaces=1';
    const mask = secretMasker([token]);
    for (const text of [
      `plain ${token}`,
      `url https://h/?t=${encodeURIComponent(token)}`,
      `form t=${encodeURIComponent(token).replaceAll('%20', '+')}`,
      `git oauth2:${token}@github.com`,
      `Authorization: Basic ${b64(`oauth2:${token}`)}`,
      `Authorization: Basic ${b64(`x-access-token:${token}`)}`,
    ]) {
      const masked = mask(text);
      expect(masked, text).toContain(SECRET_MASK);
      expect(masked).not.toContain(token);
      expect(masked).not.toContain(encodeURIComponent(token));
    }
  });

  it('leaves short secrets in plain form only (encoded fragments would garble ordinary text)', () => {
    expect(secretForms('abcd')).toEqual(['abcd']);
    expect(secretForms('abcdefgh').length).toBeGreaterThan(3);
  });

  it('knows every secret a start configuration carries', () => {
    const config = {
      llm: { model: 'm', api_key: 'sk-llm-key-1', base_url: null },
      secrets: { A: 'custom-secret-2' },
      repository: { auth_header: `Authorization: Basic ${b64('oauth2:git-token-3')}` },
      mcp_config: {
        sse_servers: [{ url: 'http://h', api_key: 'sse-key-4' }],
        shttp_servers: [{ url: 'http://h', api_key: null }],
        stdio_servers: [{ name: 's', command: 'c', args: [], env: { E: 'env-value-5' } }],
      },
    } as unknown as StartConfig;
    expect(startConfigSecrets(config)).toEqual(
      expect.arrayContaining(['sk-llm-key-1', 'custom-secret-2', 'git-token-3', 'sse-key-4', 'env-value-5']),
    );
  });
});
