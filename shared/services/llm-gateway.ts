import { LlmGateway } from '#shared/llm/gateway.ts';
import { defineService } from '#shared/services.ts';
import { llmCredentials } from '#shared/services/llm-credentials.ts';
import { platformLlms } from '#shared/services/platform-llms.ts';
import { usageAlerts } from '#shared/services/usage-alerts.ts';
import { readStanding } from '#shared/usage/standing.ts';

/** Calls in flight per organization at the gateway (LLM_CONCURRENT_CALLS_PER_ORG, default 32). */
export const llmConcurrency = (env: NodeJS.ProcessEnv = process.env): number => {
  const raw = env.LLM_CONCURRENT_CALLS_PER_ORG;
  const n = raw === undefined || raw === '' ? 32 : Number(raw);
  if (!Number.isInteger(n) || n < 1)
    throw new Error('Configuration error: LLM_CONCURRENT_CALLS_PER_ORG must be a positive integer');
  return n;
};

export const llmGateway = defineService(
  {
    adapters: [
      'llmLedger',
      'plans',
      'platformLlmKey',
      'sealer',
      'conversationStore',
      'sandboxStore',
      'accountStore',
      'usageStore',
    ],
    uses: [llmCredentials, platformLlms, usageAlerts],
  },
  (c) =>
    new LlmGateway({
      credentials: c.use(llmCredentials),
      policy: c.use(platformLlms),
      plans: () => c.adapters.plans,
      key: (model) => c.adapters.platformLlmKey(model),
      ledger: c.adapter('llmLedger'),
      sealer: () => c.adapters.sealer,
      concurrency: llmConcurrency(),
      alerts: c.use(usageAlerts),
      lookup: {
        conversationVersion: async (userId, conversationId) => {
          const rec = await c.adapters.conversationStore.get(userId, conversationId);
          return rec ? (rec.keyVersion ?? 1) : undefined;
        },
        sandbox: async (sandboxId) => {
          const rec = await c.adapters.sandboxStore.get(sandboxId);
          return rec && !rec.deletedAt ? { status: rec.status, generation: rec.generation } : undefined;
        },
        user: async (userId) => {
          const user = await c.adapters.accountStore.getUser(userId);
          return user ? { status: user.status } : undefined;
        },
        org: async (orgId) => {
          const org = await c.adapters.accountStore.getOrg(orgId);
          return org ? { plan: org.plan, status: org.status } : undefined;
        },
        standing: (orgId, day, prepaid) => readStanding(c.adapters.usageStore, orgId, day, prepaid),
      },
    }),
);
