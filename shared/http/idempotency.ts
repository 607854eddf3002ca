import {
  IdempotencyAlreadyInProgressError,
  IdempotencyConfig,
  IdempotencyInconsistentStateError,
  IdempotencyValidationError,
  makeIdempotent,
} from '@aws-lambda-powertools/idempotency';
import type { DynamoDBPersistenceLayer } from '@aws-lambda-powertools/idempotency/dynamodb';
import { ApiError, invalid } from '#shared/http/errors.ts';
import type { Sealer } from '#shared/secrets/sealer.ts';
import {
  IDEMPOTENCY_HEADER,
  KEEP_SECONDS,
  IN_PROGRESS_SECONDS,
  REPLAYED_HEADER,
  RETRY_AFTER_SECONDS,
  type StoredAnswer,
} from '#shared/http/idempotency-key.ts';

/** Powertools' side of idempotent creates (the rules: shared/http/idempotency-key.ts). Only idempotent routes' bundles carry it. */

/** The persistence the utility writes through (the idempotency table). */
export type IdempotencyStore = DynamoDBPersistenceLayer;

const loc = ['header', IDEMPOTENCY_HEADER];

export class Idempotency {
  private readonly config = new IdempotencyConfig({
    eventKeyJmesPath: 'scope',
    payloadValidationJmesPath: 'body',
    expiresAfterSeconds: KEEP_SECONDS,
    hashFunction: 'sha256',
    throwOnNoIdempotencyKey: true,
  });

  /**
   * `sealer`: for routes whose answer holds a credential (`managesCredentials`: a new API key, which
   * is otherwise stored only as a hash), the stored answer is sealed for its user, as secrets are.
   */
  constructor(
    private readonly store: IdempotencyStore,
    private readonly sealer: () => Sealer,
  ) {
    // Every request's INPROGRESS record expires IN_PROGRESS_SECONDS after it starts.
    this.config.registerLambdaContext({ getRemainingTimeInMillis: () => IN_PROGRESS_SECONDS * 1000 } as never);
  }

  /**
   * Runs `execute` once per (route, user, key): the first answer, or a replay of it with
   * `Idempotent-Replayed: true`. Throws 409 (in progress, with Retry-After) or 422 (another body).
   */
  async run(
    scope: { route: string; userId: string; key: string; sealed?: boolean },
    body: unknown,
    execute: () => Promise<StoredAnswer>,
  ): Promise<StoredAnswer> {
    let first: StoredAnswer | undefined;
    const context = `idempotency#${scope.userId}`;
    const once = makeIdempotent(
      async (_payload: unknown): Promise<StoredAnswer | { sealed: string }> => {
        first = await execute();
        return scope.sealed ? { sealed: await this.sealer().seal(JSON.stringify(first), context) } : first;
      },
      { persistenceStore: this.store, config: this.config },
    );
    try {
      const stored = (await once({
        scope: [scope.route, scope.userId, scope.key],
        body: body ?? null,
      })) as StoredAnswer | { sealed: string };
      if (first) return first;
      const answer: StoredAnswer =
        'sealed' in stored ? JSON.parse(await this.sealer().open(stored.sealed, context)) : stored;
      return { ...answer, headers: { ...answer.headers, [REPLAYED_HEADER]: 'true' } };
    } catch (err) {
      if (err instanceof IdempotencyValidationError)
        throw invalid([
          {
            type: 'idempotency_key_reused',
            loc,
            msg: `This ${IDEMPOTENCY_HEADER} was used with a different request body: use a new key for a new request`,
          },
        ]);
      if (err instanceof IdempotencyAlreadyInProgressError || err instanceof IdempotencyInconsistentStateError)
        throw new ApiError(
          409,
          {
            detail: `A request with this ${IDEMPOTENCY_HEADER} is still in progress: retry after ${RETRY_AFTER_SECONDS} s`,
          },
          { 'retry-after': String(RETRY_AFTER_SECONDS) },
        );
      throw err;
    }
  }
}
