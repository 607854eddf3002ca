import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '#infra/config.ts';

const from = (context: Record<string, unknown>) => loadConfig((key) => context[key]);

describe('deployment configuration (CDK context)', () => {
  it('accepts the context in cdk.json', () => {
    const context = JSON.parse(readFileSync(new URL('../../cdk.json', import.meta.url), 'utf8')).context;
    expect(() => from(context)).not.toThrow();
  });

  it('fills defaults: one default spec, 30 idle minutes, no CORS, an environment-agnostic stack', () => {
    const config = from({});
    expect(config).toMatchObject({
      stackName: 'AgentConversationService',
      sandboxIdleMinutes: 30,
      maxRunningSandboxes: 5,
      sandboxSpot: false,
      corsAllowedOrigins: [],
    });
    expect(config.account).toBeUndefined();
    expect(config.sandboxSpecs).toEqual([
      {
        id: 'default',
        cpu: 1024,
        memory: 2048,
        spotFallback: false,
        command: null,
        initialEnv: {},
        workingDir: '/workspace',
      },
    ]);
  });

  it('coerces `-c key=value` strings from the command line', () => {
    const config = from({
      sandboxIdleMinutes: '45',
      sandboxSpot: 'true',
      corsAllowedOrigins: '["https://app.example.com"]',
      sandboxSpecs: '[{"id":"big","cpu":4096,"memory":16384,"spot":true}]',
    });
    expect(config.sandboxIdleMinutes).toBe(45);
    expect(config.sandboxSpot).toBe(true);
    expect(config.corsAllowedOrigins).toEqual(['https://app.example.com']);
    expect(config.sandboxSpecs[0]).toMatchObject({ id: 'big', cpu: 4096, memory: 16384, spot: true });
  });

  it("takes the console's extra sign-in origins (a token endpoint on another origin than the issuer)", () => {
    expect(from({}).oidcConnectOrigins).toEqual([]);
    expect(from({ oidcConnectOrigins: '["https://oauth2.example.com"]' }).oidcConnectOrigins).toEqual([
      'https://oauth2.example.com',
    ]);
  });

  it.each([
    [{ sandboxIdleMinutes: 'soon' }, 'context key "sandboxIdleMinutes"'],
    [{ maxRunningSandboxes: 0 }, 'context key "maxRunningSandboxes"'],
    [{ sandboxSpot: 'maybe' }, 'context key "sandboxSpot"'],
    [{ logRetentionDays: 10 }, 'context key "logRetentionDays"'],
    [{ region: 'mars' }, 'context key "region"'],
    [{ account: '123' }, 'context key "account"'],
    [{ apiThrottleRateLimit: -1 }, 'context key "apiThrottleRateLimit"'],
    [{ corsAllowedOrigins: ['https://app.example.com/path'] }, 'context key "corsAllowedOrigins" (at 0)'],
    [{ sandboxSpecs: [{ id: 'x', cpu: 1000, memory: 2048 }] }, 'context key "sandboxSpecs" (at 0.cpu)'],
    [{ sandboxSpecs: [{ id: 'x', cpu: 256, memory: 4096 }] }, 'context key "sandboxSpecs" (at 0.memory)'],
    [
      {
        sandboxSpecs: [
          { id: 'a', cpu: 256, memory: 512 },
          { id: 'a', cpu: 256, memory: 512 },
        ],
      },
      'spec ids must be unique',
    ],
    [{ sandboxSpecs: [{ id: 'a', cpu: 256, memory: 512, image: 'x' }] }, 'image'],
    [{ alarmEmail: 'not-an-address' }, 'context key "alarmEmail"'],
    [{ oidcConnectOrigins: ['https://oauth2.example.com/token'] }, 'context key "oidcConnectOrigins" (at 0)'],
    [{ oidcConnectOrigins: ['http://oauth2.example.com'] }, 'context key "oidcConnectOrigins" (at 0)'],
  ])('rejects %j naming the key', (context, message) => {
    expect(() => from(context)).toThrow(message);
  });
});
