/**
 * The table design of the whole service, as data: the CDK app creates these tables, the local
 * gateway creates them in dynalite, and docs/data-model.md explains each key. Every access pattern
 * is a GetItem or a Query on a key or an index listed here (no Scan anywhere).
 */
export interface IndexDef {
  pk: string;
  sk?: string;
  /**
   * Project only the keys and these attributes (INCLUDE); without it the index holds whole items
   * (ALL). A slim index costs a small write per item whatever the item's size, and its reader
   * fetches the items it needs from the table. `[]`: the keys only (KEYS_ONLY), written only when
   * an item enters or leaves the index.
   */
  include?: readonly string[];
}

export interface TableDef {
  pk: string;
  sk?: string;
  indexes: Record<string, IndexDef>;
  /** A number attribute (epoch seconds) after which DynamoDB deletes the item on its own (TTL). */
  ttl?: string;
}

export const tables = {
  /**
   * API keys by key id; a user's keys through `byUser`. Also holds the service's own sealed keys
   * (`system:<name>`), browser sessions (`session:<id>`) and stream tickets (`stream-ticket:<id>`),
   * the last two removed by TTL once expired.
   */
  keys: { pk: 'keyId', indexes: { byUser: { pk: 'userId', sk: 'createdAt' } }, ttl: 'expiresAtEpoch' },
  /** One item per user. */
  settings: { pk: 'userId', indexes: {} },
  /**
   * Sandboxes by id; a user's newest first through `byUser`. Two sparse indexes hold only the items
   * that carry their key attributes: `live` (every STARTING/RUNNING sandbox and unfinished deletes,
   * for the sweeper) and `liveByUser` (a user's STARTING/RUNNING ones, for the per-user limit).
   * `counters` (keys only) lists the organizations' running-slot counters (`counterShard` is set on
   * them only): the daily reconcile recounts them (docs/billing.md).
   */
  sandboxes: {
    pk: 'id',
    indexes: {
      byUser: { pk: 'userId', sk: 'createdAt' },
      live: { pk: 'liveShard', sk: 'lastActivityAt' },
      liveByUser: { pk: 'liveUserId', sk: 'lastActivityAt' },
      counters: { pk: 'counterShard', sk: 'id', include: [] },
    },
  },
  /**
   * Conversations by (user, id): a client may choose a conversation's id, so the id is unique only
   * within its user and another user's equal id neither collides nor shows. Newest first through `byUser`.
   * `counters` (keys only) lists the users' conversation counters (`counterShard` is set on them only):
   * the daily reconcile recounts them (docs/billing.md).
   */
  conversations: {
    pk: 'userId',
    sk: 'id',
    indexes: { byUser: { pk: 'userId', sk: 'createdAt' }, counters: { pk: 'counterShard', sk: 'userId', include: [] } },
  },
  /** Conversation start tasks by id; a user's through `byUser`; the unfinished ones through `pending`. */
  startTasks: {
    pk: 'id',
    indexes: {
      byUser: { pk: 'userId', sk: 'createdAt' },
      pending: { pk: 'pendingShard', sk: 'updatedAt' },
    },
  },
  /**
   * A conversation's events in one partition, `conversationKey` = `<user id>#<conversation id>`
   * (conversation ids are unique per user only), ordered by `seq`, the number the sandbox gives each
   * event (1, 2, 3, ...); `seq = 0` is the partition's counter (`lastSeq`, the end of the gap-free
   * prefix). `byKind` (`kindKey` = `<conversationKey>#<kind>`) serves the kind filter in order; it
   * holds keys and `timestamp` only (each event is written twice, and the copy stays small).
   */
  events: {
    pk: 'conversationKey',
    sk: 'seq',
    indexes: {
      byKind: { pk: 'kindKey', sk: 'seq', include: ['timestamp'] },
      // Sparse: counters whose stored bytes grew since the sweeper last summed them (`bytesOrg` = the organization).
      grownBytes: { pk: 'bytesOrg', sk: 'conversationKey', include: [] },
    },
  },
  /** Commands queued for a sandbox's program, in order (`seq` from the sandbox's counter); deleted when acknowledged. */
  commands: { pk: 'sandboxId', sk: 'seq', indexes: {} },
  /**
   * Open WebSocket connections of the event stream on AWS, by conversation (`conversationKey` as in
   * `events`), one item per connection: `sentSeq` (the last event it was sent), a delivery lease,
   * `expiresAtEpoch` at API Gateway's 2-hour connection limit. `byConnection` finds a connection's
   * item from its id alone ($disconnect, $default); `byUser` counts a user's open connections (the
   * plan's socket cap at `$connect`; suspension closes a user's streams).
   */
  /**
   * The warm pool (shared/sandboxes/pool.ts): one pool record per spec (`pool:<spec id>`, the last
   * start it could have served) and one item per standby (`sb_<hex>`). `bySpec` (sparse: `poolSpec` is
   * set on standby items only) lists a spec's standbys for the claim, the refill and the sweep.
   */
  pool: { pk: 'id', indexes: { bySpec: { pk: 'poolSpec', sk: 'createdAt' } } },
  streamConnections: {
    pk: 'conversationKey',
    sk: 'connectionId',
    // byUser: a user's open connections (suspension closes them; per-user socket caps count them).
    indexes: { byConnection: { pk: 'connectionId' }, byUser: { pk: 'userId', sk: 'connectionId' } },
    ttl: 'expiresAtEpoch',
  },
  /**
   * The first answers of idempotent creates (`Idempotency-Key`), written and read by Powertools'
   * idempotency utility (its DynamoDB persistence: `id` = route and a hash of user and key, `status`,
   * `data` the answer, `validation` a hash of the body). DynamoDB removes a record 24 hours after its
   * first answer (`expiration`); Powertools also treats an expired record as absent (dynalite has no TTL).
   */
  idempotency: { pk: 'id', indexes: {}, ttl: 'expiration' },
  /**
   * People, by user id: an OpenID person's id is `oidc_<hash of issuer and sub>`, a keys-CLI user's
   * the id the CLI named. Each holds `orgId`, `role` (owner/admin/member) and `status`
   * (active/suspended); an organization's members through `byOrg`. Operators list them through
   * `listed` (one constant partition, `listShard` = `users` on every item, newest first) and
   * `suspended` (sparse: `suspendedShard` only on suspended users).
   */
  users: {
    pk: 'userId',
    indexes: {
      byOrg: { pk: 'orgId', sk: 'userId' },
      listed: { pk: 'listShard', sk: 'createdAt' },
      suspended: { pk: 'suspendedShard', sk: 'createdAt' },
      // Sparse: accounts deleted whose data the sweeper is still removing (`purgeShard` until then).
      purging: { pk: 'purgeShard', sk: 'userId' },
    },
  },
  /**
   * Organizations by id: `plan` (a plan's name), `status`, `owners` (the count the last-owner rule
   * reads). Operators list them through `listed` and `suspended`, as users.
   */
  orgs: {
    pk: 'orgId',
    indexes: {
      listed: { pk: 'listShard', sk: 'createdAt' },
      suspended: { pk: 'suspendedShard', sk: 'createdAt' },
    },
  },
  /**
   * Invitations by the SHA-256 of their token (the token itself is never stored); an organization's
   * through `byOrg`, an email's through `byEmail` (invite-only sign-up). Removed by TTL after expiry.
   */
  invitations: {
    pk: 'tokenHash',
    indexes: { byOrg: { pk: 'orgId', sk: 'createdAt' }, byEmail: { pk: 'email', sk: 'createdAt' } },
    ttl: 'expiresAtEpoch',
  },
  /**
   * The audit log, append-only: per organization, `entryId` = `<ISO time>#<random>` so a Query reads
   * it newest first; removed by TTL after AUDIT_RETENTION_DAYS.
   */
  auditLog: { pk: 'orgId', sk: 'entryId', indexes: {}, ttl: 'expiresAtEpoch' },
  /**
   * The usage ledger (docs/billing.md): compute records, pk `sbx#<sandbox id>#<generation>`, sk the
   * interval's start (a repeat is the same key); (organization, day) totals, pk `org#<org id>`, sk
   * `day#<day>`; (user, day) totals, pk `orgusers#<org id>`, sk `day#<day>#<user id>`. `byUser`
   * (`userKey` = `<org id>#<user id>`, `day`) holds only the user totals: one user's month in O(days).
   * `byDay` (`day`, `recordKey` = `<org id>#<start, ISO>#<record pk>`) holds only the records (compute
   * and LLM): a day's records for the reconcile, an organization's in time order for the export.
   * Records expire (`expiresAtEpoch`) USAGE_RETENTION_DAYS after their day; totals never do.
   */
  usage: {
    pk: 'pk',
    sk: 'sk',
    indexes: { byUser: { pk: 'userKey', sk: 'day' }, byDay: { pk: 'day', sk: 'recordKey' } },
    ttl: 'expiresAtEpoch',
  },
} as const satisfies Record<string, TableDef>;

export type TableKey = keyof typeof tables;

export const tableKeys = Object.keys(tables) as TableKey[];

/** The environment variable that carries a table's physical name into a function. */
export const tableEnvVar = (key: TableKey) => `TABLE_${key.replace(/[A-Z]/g, (c) => `_${c}`).toUpperCase()}`;

/** Key attributes are strings, except the numeric ordering keys named here (DynamoDB needs the type). */
const numericKeyAttributes: ReadonlySet<string> = new Set(['seq']);
export const keyAttributeType = (name: string): 'S' | 'N' => (numericKeyAttributes.has(name) ? 'N' : 'S');
