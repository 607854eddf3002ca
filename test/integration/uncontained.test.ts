import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { getSandbox, waitForSandboxStatus } from '#test/helpers/sandboxes.ts';
import { startTestStack, type TestStack } from '#test/helpers/stack.ts';

/** `npm start` where neither bubblewrap nor Seatbelt runs (forced here): one local user, marked uncontained. */
let stack: TestStack;
beforeAll(async () => {
  stack = await startTestStack({ containment: 'none', allowUncontained: false });
});
afterAll(async () => {
  await stack?.stop();
});

describe('sandboxes without containment', () => {
  it('start for the local user, marked contained: false', async () => {
    const { body } = await stack.call('POST', '/api/v1/sandboxes');
    const running = await waitForSandboxStatus(stack, body.id, 'RUNNING');
    expect(running.contained).toBe(false);
  });

  it("refuse another user's key, saying how to allow it", async () => {
    const other = await stack.newUser('someone-else');
    const { body } = await stack.call('POST', '/api/v1/sandboxes', { key: other });
    const failed = (await getSandbox(stack, body.id, other))!;
    expect(failed.status).toBe('ERROR');
    expect(failed.detail).toContain('uncontained');
    expect(failed.detail).toContain('--allow-uncontained');
  });
});
