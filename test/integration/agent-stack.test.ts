import { describe, expect, it } from 'vitest';
import { startAgentStack } from '#test/helpers/agent-stack.ts';

// The fixture itself; the suites that set up with it (conversations, gates, event-stream, ...) are its real test.
describe('startAgentStack', () => {
  it('saves the LLM settings with the extras over them, for the dev user and for another', async () => {
    const agent = await startAgentStack({ settings: { max_iterations: 7 } });
    try {
      expect((await agent.stack.call('GET', '/api/settings')).body).toMatchObject({
        llm_model: 'm',
        llm_base_url: agent.llm.baseUrl,
        llm_api_key_set: true,
        max_iterations: 7,
      });
      const key = await agent.stack.newUser('fixture-other');
      await agent.saveSettings({ llm_model: 'other' }, key);
      expect((await agent.stack.call('GET', '/api/settings', { key })).body).toMatchObject({
        llm_model: 'other',
        llm_base_url: agent.llm.baseUrl,
      });
    } finally {
      await agent.stop();
    }
  });

  it('fails the start on settings the API refuses, naming the status and the answer', async () => {
    await expect(startAgentStack({ settings: { max_iterations: 0 } })).rejects.toThrow(
      /POST \/api\/settings answered 422: .*max_iterations/,
    );
  });
});
