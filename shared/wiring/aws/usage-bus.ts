import { awsJsonPost } from '#shared/aws-sign.ts';
import { NOTICE_DETAIL_TYPE, NOTICE_SOURCE } from '#shared/usage/alerts.ts';
import type { Builder } from '#shared/wiring/adapters.ts';
import { requireEnv } from '#shared/env.ts';

/**
 * EventBridge PutEvents on the operator's usage bus (USAGE_EVENT_BUS, its ARN): one signed POST in
 * EventBridge's JSON protocol (`shared/aws-sign.ts`), not `@aws-sdk/client-eventbridge` (not a
 * dependency, and the heartbeat bundle has a size budget).
 */
export const usageBus: Builder<'usageBus'> = () => {
  const busArn = requireEnv('USAGE_EVENT_BUS', 'the usage notices bus');
  const putEvents = awsJsonPost('events', 'EVENTBRIDGE', 'AWSEvents.PutEvents', '1.1');
  return {
    async send(notice) {
      const detail = {
        org_id: notice.orgId,
        limit: notice.limit,
        threshold: notice.threshold,
        used: notice.used,
        limit_value: notice.limitValue,
        unit: notice.unit,
        period: notice.period,
        at: notice.at,
      };
      const res = await putEvents({
        Entries: [
          {
            EventBusName: busArn,
            Source: NOTICE_SOURCE,
            DetailType: NOTICE_DETAIL_TYPE,
            Detail: JSON.stringify(detail),
          },
        ],
      });
      let failed = 0;
      try {
        failed = Number(JSON.parse(res.text).FailedEntryCount ?? 0);
      } catch {
        failed = res.ok ? 0 : 1;
      }
      if (!res.ok || failed > 0) throw new Error(`PutEvents on the usage bus failed: status ${res.status}`);
    },
  };
};
