import { ConversationBridge } from '#shared/conversations/bridge.ts';
import { VersionedConversationUpdate } from '#shared/conversations/versioned-update.ts';
import { modelsHash } from '#shared/llm/platform-models.ts';
import { defineService } from '#shared/services.ts';
import { llmCredentials } from '#shared/services/llm-credentials.ts';
import { platformLlms } from '#shared/services/platform-llms.ts';
import { sandboxQueue } from '#shared/services/sandbox-queue.ts';
import { settings } from '#shared/services/settings.ts';

export const conversationBridge = defineService(
  {
    adapters: ['conversationStore', 'startTaskStore', 'eventStore', 'eventFeed', 'agentReports', 'plans', 'bridgeUrl'],
    uses: [platformLlms, settings, sandboxQueue, llmCredentials],
  },
  (c) => {
    const policy = c.use(platformLlms);
    return new ConversationBridge(
      c.adapter('conversationStore'),
      c.adapter('startTaskStore'),
      c.adapter('eventStore'),
      c.use(settings),
      c.use(sandboxQueue),
      new VersionedConversationUpdate(c.adapter('conversationStore')),
      c.adapter('eventFeed'),
      undefined,
      // Read by the ingest only (the functions that grant the plans capability): its rate and cap.
      (name) => c.adapters.plans.plan(name),
      {
        policy,
        // The gateway is served on the same host the sandbox reaches the bridge on (locally the gateway's port).
        gatewayUrl: () => c.adapters.bridgeUrl(undefined),
        credential: (sandbox, conversation, budgetUsd) =>
          c.use(llmCredentials).mint({
            u: conversation.userId,
            o: sandbox.orgId ?? conversation.userId,
            c: conversation.id,
            v: conversation.keyVersion ?? 1,
            s: sandbox.id,
            g: sandbox.generation ?? 1,
            m: modelsHash(policy.allowed(sandbox.plan)),
            ...(budgetUsd === null ? {} : { b: Math.round(budgetUsd * 1_000_000) }),
          }),
      },
      // The ingest keeps the agent's own LLM usage reports (informational).
      c.adapter('agentReports'),
    );
  },
);
