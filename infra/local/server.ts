import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { uncontainedWarning } from '#shared/sandboxes/runtime/containment.ts';
import { loadLocalConfig } from '#infra/local/config.ts';
import { startLocalStack } from '#infra/local/stack.ts';
import { endpointFile } from '#infra/local/dynamo.ts';

/** `npm start`: the whole service on this machine, no AWS account needed. */
async function main(): Promise<void> {
  const config = loadLocalConfig(process.env, process.argv.slice(2));
  const stack = await startLocalStack(config);
  process.stderr.write(
    `${[
      '',
      `Agent Conversation Service listening on ${stack.url}`,
      `  storage:  ${config.memory ? 'in memory (--memory)' : join(config.dataDir, 'dynamodb')}`,
      `  sandboxes: ${stack.containment === 'none' ? 'UNCONTAINED' : `contained by ${stack.containment === 'bwrap' ? 'bubblewrap' : 'Seatbelt'}`}`,
      ...(stack.reconciled.length
        ? [`  reconciled: ${stack.reconciled.length} sandbox(es) that stopped with the last server`]
        : []),
      `  API docs: ${stack.url}/docs`,
      `  events:   ${stack.url.replace(/^http/, 'ws')}/sockets/events/<conversation id>?resend_all=true (README: live events)`,
      `  dev key:  ${stack.devKey}  (user "dev", also in ${join(config.dataDir, 'dev-api-key')})`,
      ...(stack.devIssuer
        ? [
            `  sign in:  open ${stack.url}/ and press "Sign in with OpenID": any email, password ${stack.devIssuer.password}`,
            `            (development OpenID provider at ${stack.devIssuer.issuer}; password also in ${join(config.dataDir, 'dev-signin-password')};`,
            '            set OIDC_ISSUER and OIDC_AUDIENCE to use a real issuer instead: docs/sign-in.md)',
          ]
        : [
            `  sign in:  ${process.env.OIDC_ISSUER ? `with ${process.env.OIDC_ISSUER} (OIDC_ISSUER)` : 'API keys only (OIDC_ISSUER unset and HOST is not loopback)'}`,
          ]),
      `  try:      curl -H "X-Session-API-Key: $(cat ${join(config.dataDir, 'dev-api-key')})" ${stack.url}/api/v1/users/me`,
      ...(stack.containment === 'none' ? ['', uncontainedWarning()] : []),
      '',
    ].join('\n')}\n`,
  );
  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    process.stderr.write(`\n${signal}: finishing requests in flight and closing the database...\n`);
    await stack.close();
    rmSync(endpointFile(config.dataDir), { force: true });
    process.exit(0);
  };
  process.on('SIGINT', () => void stop('SIGINT'));
  process.on('SIGTERM', () => void stop('SIGTERM'));
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
