import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { conditionalWrite, documentClient, tableName } from '#shared/store/dynamo.ts';
import { addToDayTotals, usageKeys } from '#shared/usage/dynamo-usage-store.ts';
import type { AgentReport, AgentReports } from '#shared/usage/usage-store.ts';

/**
 * The agent's own LLM usage reports (table `usage`, docs/billing.md "The agent's own reports"): an adapter
 * of its own, so only the ingest's bundle carries it.
 */
export class DynamoAgentReports implements AgentReports {
  private readonly db = documentClient();
  private readonly table = tableName('usage');

  async recordAgentReport(r: AgentReport): Promise<boolean> {
    let old: Record<string, unknown> | undefined;
    const kept = await conditionalWrite(async () => {
      const out = await this.db.send(
        new UpdateCommand({
          TableName: this.table,
          Key: { pk: usageKeys.agentConversation(r.userId, r.conversationId), sk: 'latest' },
          // `at` and others are reserved words: every member by name.
          UpdateExpression:
            'SET #seq = :seq, #model = :model, #calls = :c, #in = :i, #out = :o, #micro = :m, #org = :org, #at = :at',
          ConditionExpression: 'attribute_not_exists(#seq) OR #seq < :seq',
          ExpressionAttributeNames: {
            '#seq': 'seq',
            '#model': 'model',
            '#calls': 'calls',
            '#in': 'inputTokens',
            '#out': 'outputTokens',
            '#micro': 'microUsd',
            '#org': 'orgId',
            '#at': 'at',
          },
          ExpressionAttributeValues: {
            ':seq': r.seq,
            ':model': r.model,
            ':c': r.calls,
            ':i': r.inputTokens,
            ':o': r.outputTokens,
            ':m': r.microUsd,
            ':org': r.orgId,
            ':at': r.at,
          },
          ReturnValues: 'ALL_OLD',
        }),
      );
      old = out.Attributes;
    });
    if (!kept) return false;
    // The increase over the highest report so far; a report lower than it (a restarted count, a lie) adds
    // nothing, and the highest stays the mark (restored in a second write, only when a member went down).
    const up = (now: number, field: string) => Math.max(0, now - Number(old?.[field] ?? 0));
    const fields = [
      ['calls', r.calls],
      ['inputTokens', r.inputTokens],
      ['outputTokens', r.outputTokens],
      ['microUsd', r.microUsd],
    ] as const;
    const lower = fields.filter(([f, v]) => v < Number(old?.[f] ?? 0));
    if (lower.length)
      await this.db
        .send(
          new UpdateCommand({
            TableName: this.table,
            Key: { pk: usageKeys.agentConversation(r.userId, r.conversationId), sk: 'latest' },
            UpdateExpression: `SET ${lower.map(([f]) => `#${f} = :${f}`).join(', ')}`,
            ConditionExpression: '#seq = :seq',
            ExpressionAttributeNames: { '#seq': 'seq', ...Object.fromEntries(lower.map(([f]) => [`#${f}`, f])) },
            ExpressionAttributeValues: {
              ':seq': r.seq,
              ...Object.fromEntries(lower.map(([f]) => [`:${f}`, Number(old![f])])),
            },
          }),
        )
        .catch((err: unknown) => {
          // A later report replaced it meanwhile: that one's values stand.
          if ((err as { name?: string }).name !== 'ConditionalCheckFailedException') throw err;
        });
    const values = {
      ':c': up(r.calls, 'calls'),
      ':i': up(r.inputTokens, 'inputTokens'),
      ':o': up(r.outputTokens, 'outputTokens'),
      ':m': up(r.microUsd, 'microUsd'),
      ':day': r.day,
    };
    if (!values[':c'] && !values[':i'] && !values[':o'] && !values[':m']) return true;
    // Members of their own: nothing that bills, limits or the reconcile counts ever reads them.
    const ADD_AGENT = 'ADD agentCalls :c, agentInputTokens :i, agentOutputTokens :o, agentMicroUsd :m SET #day = :day';
    await addToDayTotals(this.db, this.table, r, ADD_AGENT, values);
    return true;
  }
}
