import { describe, expect, it } from 'vitest';
import { sandboxConfig } from '#shared/sandboxes/config.ts';

const local = { startTimeoutSeconds: 60, pollMaxSeconds: 20, pollIntervalMs: 200 };

describe('sandboxConfig', () => {
  it('has the documented defaults', () => {
    expect(sandboxConfig({}, local)).toEqual({ idleMinutes: 30, maxRunning: 5, heartbeatSeconds: 30, ...local });
    expect(sandboxConfig({}, { ...local, startTimeoutSeconds: 600 }).startTimeoutSeconds).toBe(600);
  });

  it('reads the environment over the defaults', () => {
    const c = sandboxConfig(
      { SANDBOX_IDLE_MINUTES: '5', SANDBOX_START_TIMEOUT_SECONDS: '90', MAX_RUNNING_SANDBOXES: '2' },
      local,
    );
    expect(c).toMatchObject({ idleMinutes: 5, startTimeoutSeconds: 90, maxRunning: 2 });
  });

  it('fails naming the key on a bad value', () => {
    expect(() => sandboxConfig({ MAX_RUNNING_SANDBOXES: 'many' }, local)).toThrow(
      'Configuration error: MAX_RUNNING_SANDBOXES must be a whole number',
    );
    expect(() => sandboxConfig({ SANDBOX_IDLE_MINUTES: '0' }, local)).toThrow(
      'SANDBOX_IDLE_MINUTES must be at least 1',
    );
  });
});
