import { DynamoAgentReports } from '#shared/usage/dynamo-agent-reports.ts';
import type { Builder } from '#shared/wiring/adapters.ts';

/** The agent's own LLM usage reports (the ingest only: no other bundle carries them). */
export const agentReports: Builder<'agentReports'> = () => new DynamoAgentReports();
