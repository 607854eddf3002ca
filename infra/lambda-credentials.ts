/**
 * Stands in for `@aws-sdk/credential-provider-node` in Lambda bundles (an esbuild alias in
 * infra/bundle.ts). Lambda gives a function its role's credentials in the environment, so the
 * default chain's SSO, STS web-identity, INI-file, process and instance-metadata providers (about
 * 100 KB minified, with the nested STS/SSO clients) are code a function never runs. Same contract
 * as the SDK's `fromEnv`: credentials from `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`,
 * `AWS_SESSION_TOKEN`, or an error naming what is missing. Source runs (tests, `npm start`) keep
 * the SDK's own chain.
 */
export const defaultProvider = () => async () => {
  const accessKeyId = process.env.AWS_ACCESS_KEY_ID;
  const secretAccessKey = process.env.AWS_SECRET_ACCESS_KEY;
  if (!accessKeyId || !secretAccessKey) {
    throw Object.assign(
      new Error('No AWS credentials: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY are not set (Lambda sets them)'),
      {
        name: 'CredentialsProviderError',
      },
    );
  }
  return {
    accessKeyId,
    secretAccessKey,
    ...(process.env.AWS_SESSION_TOKEN ? { sessionToken: process.env.AWS_SESSION_TOKEN } : {}),
  };
};
