import { expect, it } from 'vitest';
import { startTier } from '#test/tier/stack.ts';

it('smoke', async () => {
  const t = await startTier();
  try {
    const h = await t.call('GET', '/health');
    console.log('health', h.status, h.text);
    const k = await t.keys(['create', '--user', 'alice']);
    console.log('keys', k.code, k.stdout, k.stderr.slice(0, 2000));
    const key = k.stdout.trim().split('\n').pop()!;
    const me = await t.call('GET', '/api/v1/users/me', { key });
    console.log('me', me.status, me.text);
    const specs = await t.call('GET', '/api/v1/sandbox-specs/search', { key });
    console.log('specs', specs.status, specs.text.slice(0, 300));
    const noauth = await t.call('GET', '/api/v1/sandbox-specs/search');
    console.log('noauth', noauth.status, noauth.text.slice(0, 300));
    const nf = await t.call('GET', '/nope');
    console.log('nf', nf.status, nf.text.slice(0, 300));
    console.log(t.explain());
  } finally {
    await t.stop();
  }
}, 120_000);
