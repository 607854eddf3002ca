import { GetSecretValueCommand, SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { GetParameterCommand, SSMClient } from '@aws-sdk/client-ssm';
import { arnStripe } from '#shared/billing/stripe.ts';
import type { Builder } from '#shared/wiring/adapters.ts';

/** Stripe's meter event stream, its key read by ARN (STRIPE_API_KEY_ARN) on first use; null without one. */
export const stripe: Builder<'stripe'> = () =>
  arnStripe(process.env, async (arn) => {
    if (arn.split(':')[2] === 'ssm') {
      const out = await new SSMClient({}).send(new GetParameterCommand({ Name: arn, WithDecryption: true }));
      if (!out.Parameter?.Value) throw new Error(`The parameter ${arn} has no value`);
      return out.Parameter.Value;
    }
    const out = await new SecretsManagerClient({}).send(new GetSecretValueCommand({ SecretId: arn }));
    if (!out.SecretString) throw new Error(`The secret ${arn} has no string value`);
    return out.SecretString;
  });
