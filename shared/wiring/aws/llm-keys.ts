import { GetSecretValueCommand, SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { GetParameterCommand, SSMClient } from '@aws-sdk/client-ssm';
import { arnKeys } from '#shared/llm/keys.ts';
import type { Builder } from '#shared/wiring/adapters.ts';

/**
 * Upstream keys by ARN (the declaration carries ARNs, never values): an SSM SecureString parameter
 * (standard tier, no monthly charge) or a Secrets Manager secret, read at first use and cached for
 * five minutes, so a rotated key is used without a redeploy. A module of its own: only the gateway's
 * bundle carries these two SDK clients.
 */
export const platformLlmKey: Builder<'platformLlmKey'> = (get) => {
  let ssm: SSMClient | undefined;
  let secrets: SecretsManagerClient | undefined;
  return arnKeys(get('platformModels'), async (arn) => {
    if (arn.split(':')[2] === 'ssm') {
      ssm ??= new SSMClient({});
      const out = await ssm.send(new GetParameterCommand({ Name: arn, WithDecryption: true }));
      if (!out.Parameter?.Value) throw new Error(`The parameter ${arn} has no value`);
      return out.Parameter.Value;
    }
    secrets ??= new SecretsManagerClient({});
    const out = await secrets.send(new GetSecretValueCommand({ SecretId: arn }));
    if (!out.SecretString) throw new Error(`The secret ${arn} has no string value`);
    return out.SecretString;
  });
};
