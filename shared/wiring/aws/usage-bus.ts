import { SignatureV4 } from '@smithy/signature-v4';
import { fromEnv, Sha256 } from '#shared/aws-sign.ts';
import { NOTICE_DETAIL_TYPE, NOTICE_SOURCE } from '#shared/usage/alerts.ts';
import type { Builder } from '#shared/wiring/adapters.ts';
import { requireEnv } from '#shared/wiring/lazy.ts';

/**
 * EventBridge PutEvents on the operator's usage bus (USAGE_EVENT_BUS, its ARN): one signed POST in
 * EventBridge's JSON protocol, not `@aws-sdk/client-eventbridge` (not a dependency, and the heartbeat
 * bundle has a size budget), as `shared/lambda-event.ts` does for Lambda. The endpoint as the SDK
 * resolves it: `AWS_ENDPOINT_URL_EVENTBRIDGE`, `AWS_ENDPOINT_URL`, then the region's.
 */
export const usageBus: Builder<'usageBus'> = () => {
  const busArn = requireEnv('USAGE_EVENT_BUS', 'the usage notices bus');
  const region = process.env.AWS_REGION ?? process.env.AWS_DEFAULT_REGION ?? 'us-east-1';
  const endpoint = new URL(
    process.env.AWS_ENDPOINT_URL_EVENTBRIDGE ??
      process.env.AWS_ENDPOINT_URL ??
      `https://events.${region}.amazonaws.com`,
  );
  const signer = new SignatureV4({ service: 'events', region, sha256: Sha256, credentials: async () => fromEnv() });
  const path = endpoint.pathname.endsWith('/') ? endpoint.pathname : `${endpoint.pathname}/`;
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
      const body = JSON.stringify({
        Entries: [
          {
            EventBusName: busArn,
            Source: NOTICE_SOURCE,
            DetailType: NOTICE_DETAIL_TYPE,
            Detail: JSON.stringify(detail),
          },
        ],
      });
      const signed = await signer.sign({
        method: 'POST',
        protocol: endpoint.protocol,
        hostname: endpoint.hostname,
        ...(endpoint.port ? { port: Number(endpoint.port) } : {}),
        path,
        query: {},
        headers: {
          host: endpoint.host,
          'content-type': 'application/x-amz-json-1.1',
          'x-amz-target': 'AWSEvents.PutEvents',
        },
        body,
      });
      const { host: _host, ...headers } = signed.headers;
      const res = await fetch(`${endpoint.origin}${path}`, { method: 'POST', headers, body });
      const text = await res.text().catch(() => '');
      let failed = 0;
      try {
        failed = Number(JSON.parse(text).FailedEntryCount ?? 0);
      } catch {
        failed = res.ok ? 0 : 1;
      }
      if (!res.ok || failed > 0) throw new Error(`PutEvents on the usage bus failed: status ${res.status}`);
    },
  };
};
