import { sandboxConfig as readSandboxConfig } from '#shared/sandboxes/config.ts';
import { DynamoSandboxStore } from '#shared/sandboxes/dynamo-sandbox-store.ts';
import type { Builder } from '#shared/wiring/adapters.ts';

export const sandboxStore: Builder<'sandboxStore'> = () => new DynamoSandboxStore();
export const sandboxConfig: Builder<'sandboxConfig'> = () =>
  readSandboxConfig(process.env, { startTimeoutSeconds: 600, pollMaxSeconds: 10, pollIntervalMs: 1000 });
export const bridgeUrl: Builder<'bridgeUrl'> = () => publicBaseUrl;

/**
 * Where a sandbox reaches the API: `PUBLIC_BASE_URL` if set (a custom domain), else the host the
 * starting request came to. Never the API's URL through the environment: that would make the
 * functions depend on the API in CloudFormation, a cycle.
 */
export function publicBaseUrl(host: string | undefined): string {
  const configured = process.env.PUBLIC_BASE_URL;
  if (configured) return configured.replace(/\/+$/, '');
  if (!host)
    throw new Error(
      'Cannot tell a sandbox where the API is: the request has no Host header and PUBLIC_BASE_URL is not set',
    );
  return `https://${host}`;
}
