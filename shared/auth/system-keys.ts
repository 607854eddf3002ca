import { randomBytes } from 'node:crypto';
import { GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import type { Sealer } from '#shared/secrets/sealer.ts';
import { documentClient, isConditionFailure, tableName } from '#shared/store/dynamo.ts';

/**
 * Keys the service makes for itself (e.g. the cursor signing key): 32 random bytes, created on
 * first use with a conditional put (so racing cold starts agree on one), sealed like user secrets,
 * kept in the keys table under `system:<name>` (user key ids are hex, so they cannot collide).
 * Costs nothing at rest, unlike a secrets-manager entry.
 */
export function systemKey(name: string, sealer: Sealer): () => Promise<Buffer> {
  let cached: Promise<Buffer> | undefined;
  const load = async (): Promise<Buffer> => {
    const db = documentClient();
    const table = tableName('keys');
    const keyId = `system:${name}`;
    for (let attempt = 0; attempt < 3; attempt++) {
      const existing = await db.send(new GetCommand({ TableName: table, Key: { keyId }, ConsistentRead: true }));
      const sealed = existing.Item?.sealed as string | undefined;
      if (sealed) return Buffer.from(await sealer.open(sealed, keyId), 'base64');
      const fresh = randomBytes(32);
      try {
        await db.send(
          new PutCommand({
            TableName: table,
            Item: {
              keyId,
              sealed: await sealer.seal(fresh.toString('base64'), keyId),
              createdAt: new Date().toISOString(),
            },
            ConditionExpression: 'attribute_not_exists(keyId)',
          }),
        );
        return fresh;
      } catch (err) {
        if (!isConditionFailure(err)) throw err;
      }
    }
    throw new Error(`Could not create system key ${name}`);
  };
  return () => {
    cached ??= load().catch((err: unknown) => {
      cached = undefined;
      throw err;
    });
    return cached;
  };
}
