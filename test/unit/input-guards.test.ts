import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { nestedDeeperThan } from '#shared/http/json-depth.ts';
import { MASK, scrub, scrubText } from '#shared/http/redact.ts';

describe('nestedDeeperThan', () => {
  it('counts arrays and objects, not brackets inside strings or after escapes', () => {
    expect(nestedDeeperThan('[[[]]]', 3)).toBe(false);
    expect(nestedDeeperThan('[[[[]]]]', 3)).toBe(true);
    expect(nestedDeeperThan('{"a":{"b":[1]}}', 3)).toBe(false);
    expect(nestedDeeperThan('{"a":{"b":[{}]}}', 3)).toBe(true);
    expect(nestedDeeperThan(JSON.stringify({ a: '[[[[[[[[', b: '\\"[[[[[[' }), 1)).toBe(false);
    expect(nestedDeeperThan('[]'.repeat(1000), 1)).toBe(false);
  });

  it('agrees with the depth of any JSON value', () => {
    const depth = (v: unknown): number =>
      v !== null && typeof v === 'object' ? 1 + Math.max(0, ...Object.values(v).map(depth)) : 0;
    fc.assert(
      fc.property(fc.jsonValue({ maxDepth: 8 }), fc.integer({ min: 0, max: 9 }), (v, max) => {
        expect(nestedDeeperThan(JSON.stringify(v), max)).toBe(depth(v) > max);
      }),
    );
  });
});

describe('scrub', () => {
  it.each([
    ['http://user:sk-abc12345@host/v1', 'sk-abc12345'],
    ['https://x:y@h', 'x:y'],
    ['https://h/p?api_key=SECRETVALUE&x=1', 'SECRETVALUE'],
    ['https://h/p?access_token=SECRETVALUE', 'SECRETVALUE'],
    ['Authorization: Bearer abcdefgh123', 'abcdefgh123'],
    ['Basic b2F1dGgyOnRva2VuMTIz', 'b2F1dGgyOnRva2VuMTIz'],
    ['token ghp_0123456789abcdef', 'ghp_0123456789abcdef'],
  ])('removes the credential from %s', (text, secret) => {
    expect(scrubText(text)).not.toContain(secret);
    expect(scrubText(text)).toContain(MASK);
  });

  it('keeps ordinary text and masks secret-named members at any depth', () => {
    expect(scrubText('https://example.com/v1?model=gpt')).toBe('https://example.com/v1?model=gpt');
    expect(scrub({ a: [{ api_key: 'plain' }], b: 'http://u:p@h' })).toEqual({
      a: [{ api_key: MASK }],
      b: `http://${MASK}@h`,
    });
  });
});
