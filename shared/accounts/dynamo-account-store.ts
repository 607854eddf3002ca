import { GetCommand, PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { AccountStore, AuditReader, AuditStore, StorePage } from '#shared/accounts/account-store.ts';
import type {
  AccountStatus,
  AuditEntry,
  InvitationRecord,
  OrgRecord,
  OrgStatus,
  UserRecord,
} from '#shared/accounts/model.ts';
import { conditionalWrite, documentClient, tableName } from '#shared/store/dynamo.ts';
import { queryAll, queryFilled, queryPage } from '#shared/store/query.ts';

/**
 * The operators' listings (docs/data-model.md, "users, orgs, invitations"): every user and
 * organization carries `listShard` (one constant partition per table, index `listed`, by creation),
 * and a suspended one also `suspendedShard` (the sparse index `suspended`). Set here on every write,
 * so no caller can forget them; a reactivation removes `suspendedShard`.
 */
const USERS_SHARD = 'users';
const ORGS_SHARD = 'orgs';
function withShards<T extends { status: string; purgedAt?: string }>(record: T, shard: string): T {
  const {
    listShard: _l,
    suspendedShard: _s,
    purgeShard: _p,
    ...rest
  } = record as T & { listShard?: string; suspendedShard?: string; purgeShard?: string };
  return {
    ...(rest as T),
    listShard: shard,
    ...(record.status === 'suspended' ? { suspendedShard: shard } : {}),
    // A deleted account whose data the daily purge has still to remove (sparse index `purging`, users only).
    ...(record.status === 'deleted' && !record.purgedAt ? { purgeShard: shard } : {}),
  };
}

/** Tables `users`, `orgs`, `invitations`: each change a single-item conditional write. */
export class DynamoAccountStore implements AccountStore {
  private readonly db = documentClient();

  async getUser(userId: string): Promise<UserRecord | undefined> {
    const out = await this.db.send(
      new GetCommand({ TableName: tableName('users'), Key: { userId }, ConsistentRead: true }),
    );
    return out.Item as UserRecord | undefined;
  }

  createUser(record: UserRecord): Promise<boolean> {
    return conditionalWrite(() =>
      this.db.send(
        new PutCommand({
          TableName: tableName('users'),
          Item: withShards(record, USERS_SHARD),
          ConditionExpression: 'attribute_not_exists(userId)',
        }),
      ),
    );
  }

  replaceUser(record: UserRecord): Promise<boolean> {
    return conditionalWrite(() =>
      this.db.send(
        new PutCommand({
          TableName: tableName('users'),
          Item: { ...withShards(record, USERS_SHARD), version: record.version + 1 },
          ConditionExpression: 'version = :v',
          ExpressionAttributeValues: { ':v': record.version },
        }),
      ),
    );
  }

  listMembers(orgId: string): Promise<UserRecord[]> {
    return queryAll({
      TableName: tableName('users'),
      IndexName: 'byOrg',
      KeyConditionExpression: 'orgId = :o',
      ExpressionAttributeValues: { ':o': orgId },
    });
  }

  async listUsers(q: {
    orgId?: string;
    status?: AccountStatus;
    limit: number;
    after?: Record<string, unknown>;
  }): Promise<StorePage<UserRecord>> {
    const filter = q.status && !(q.status === 'suspended' && !q.orgId);
    const { index, pk, sk, value } = q.orgId
      ? { index: 'byOrg', pk: 'orgId', sk: 'userId', value: q.orgId }
      : q.status === 'suspended'
        ? { index: 'suspended', pk: 'suspendedShard', sk: 'createdAt', value: USERS_SHARD }
        : { index: 'listed', pk: 'listShard', sk: 'createdAt', value: USERS_SHARD };
    const page = await queryFilled<UserRecord>(
      {
        TableName: tableName('users'),
        IndexName: index,
        KeyConditionExpression: '#pk = :p',
        ...(filter ? { FilterExpression: '#st = :s' } : {}),
        ExpressionAttributeNames: { '#pk': pk, ...(filter ? { '#st': 'status' } : {}) },
        ExpressionAttributeValues: { ':p': value, ...(filter ? { ':s': q.status } : {}) },
        ScanIndexForward: !!q.orgId,
        ExclusiveStartKey: q.after,
      },
      q.limit,
      [...new Set(['userId', pk, sk])],
    );
    return { items: page.items, next: page.lastKey };
  }

  async listOrgs(q: {
    status?: OrgStatus;
    limit: number;
    after?: Record<string, unknown>;
  }): Promise<StorePage<OrgRecord>> {
    const sparse = q.status === 'suspended';
    const filter = q.status && !sparse;
    const pk = sparse ? 'suspendedShard' : 'listShard';
    const page = await queryFilled<OrgRecord>(
      {
        TableName: tableName('orgs'),
        IndexName: sparse ? 'suspended' : 'listed',
        KeyConditionExpression: '#pk = :p',
        ...(filter ? { FilterExpression: '#st = :s' } : {}),
        ExpressionAttributeNames: { '#pk': pk, ...(filter ? { '#st': 'status' } : {}) },
        ExpressionAttributeValues: { ':p': ORGS_SHARD, ...(filter ? { ':s': q.status } : {}) },
        ScanIndexForward: false,
        ExclusiveStartKey: q.after,
      },
      q.limit,
      ['orgId', pk, 'createdAt'],
    );
    return { items: page.items, next: page.lastKey };
  }

  async getOrg(orgId: string): Promise<OrgRecord | undefined> {
    const out = await this.db.send(
      new GetCommand({ TableName: tableName('orgs'), Key: { orgId }, ConsistentRead: true }),
    );
    return out.Item as OrgRecord | undefined;
  }

  createOrg(record: OrgRecord): Promise<boolean> {
    return conditionalWrite(() =>
      this.db.send(
        new PutCommand({
          TableName: tableName('orgs'),
          Item: withShards(record, ORGS_SHARD),
          ConditionExpression: 'attribute_not_exists(orgId)',
        }),
      ),
    );
  }

  replaceOrg(record: OrgRecord): Promise<boolean> {
    // The owner count is not the replacer's to set: it is kept as stored (adjustOwners alone moves it).
    const { owners: _owners, ...rest } = withShards(record, ORGS_SHARD) as OrgRecord & { suspendedShard?: string };
    const names = Object.keys(rest).filter((k) => k !== 'orgId' && k !== 'version');
    // No longer suspended: out of the sparse index.
    const remove = rest.suspendedShard ? '' : ' REMOVE suspendedShard';
    return conditionalWrite(() =>
      this.db.send(
        new UpdateCommand({
          TableName: tableName('orgs'),
          Key: { orgId: record.orgId },
          UpdateExpression: `SET ${names.map((_n, i) => `#n${i} = :v${i}`).join(', ')}, version = :next${remove}`,
          ConditionExpression: 'version = :v',
          ExpressionAttributeNames: Object.fromEntries(names.map((n, i) => [`#n${i}`, n])),
          ExpressionAttributeValues: {
            ...Object.fromEntries(names.map((n, i) => [`:v${i}`, (rest as Record<string, unknown>)[n]])),
            ':v': record.version,
            ':next': record.version + 1,
          },
        }),
      ),
    );
  }

  adjustOwners(orgId: string, delta: number, floor: number): Promise<boolean> {
    return conditionalWrite(() =>
      this.db.send(
        new UpdateCommand({
          TableName: tableName('orgs'),
          Key: { orgId },
          UpdateExpression: 'ADD owners :d',
          // owners + delta >= floor, i.e. owners >= floor - delta.
          ConditionExpression: 'attribute_exists(orgId) AND owners >= :min',
          ExpressionAttributeValues: { ':d': delta, ':min': floor - delta },
        }),
      ),
    );
  }

  async createInvitation(record: InvitationRecord): Promise<void> {
    await this.db.send(
      new PutCommand({
        TableName: tableName('invitations'),
        Item: record,
        ConditionExpression: 'attribute_not_exists(tokenHash)',
      }),
    );
  }

  async getInvitation(tokenHash: string): Promise<InvitationRecord | undefined> {
    const out = await this.db.send(
      new GetCommand({ TableName: tableName('invitations'), Key: { tokenHash }, ConsistentRead: true }),
    );
    return out.Item as InvitationRecord | undefined;
  }

  listInvitations(orgId: string): Promise<InvitationRecord[]> {
    return queryAll({
      TableName: tableName('invitations'),
      IndexName: 'byOrg',
      KeyConditionExpression: 'orgId = :o',
      ExpressionAttributeValues: { ':o': orgId },
      ScanIndexForward: false,
    });
  }

  listInvitationsByEmail(email: string): Promise<InvitationRecord[]> {
    return queryAll({
      TableName: tableName('invitations'),
      IndexName: 'byEmail',
      KeyConditionExpression: 'email = :e',
      ExpressionAttributeValues: { ':e': email },
      ScanIndexForward: false,
    });
  }

  acceptInvitation(tokenHash: string, userId: string, at: string): Promise<boolean> {
    // Single use: of two racing accepts exactly one sees the condition hold.
    return conditionalWrite(() =>
      this.db.send(
        new UpdateCommand({
          TableName: tableName('invitations'),
          Key: { tokenHash },
          UpdateExpression: 'SET acceptedAt = :at, acceptedBy = :u',
          ConditionExpression: 'attribute_exists(tokenHash) AND attribute_not_exists(acceptedAt) AND expiresAt > :at',
          ExpressionAttributeValues: { ':at': at, ':u': userId },
        }),
      ),
    );
  }
}

/** The audit log's writer: PutItem only, never over an existing entry (the table access `append`). */
export class DynamoAuditStore implements AuditStore {
  private readonly db = documentClient();

  async append(entry: AuditEntry): Promise<void> {
    await this.db.send(
      new PutCommand({
        TableName: tableName('auditLog'),
        Item: entry,
        ConditionExpression: 'attribute_not_exists(entryId)',
      }),
    );
  }
}

/** The audit log's reader: an organization's entries, newest first. */
export class DynamoAuditReader implements AuditReader {
  async list(orgId: string, limit: number, after?: Record<string, unknown>) {
    const page = await queryPage<AuditEntry>({
      TableName: tableName('auditLog'),
      KeyConditionExpression: 'orgId = :o',
      ExpressionAttributeValues: { ':o': orgId },
      ScanIndexForward: false,
      Limit: limit,
      ExclusiveStartKey: after,
    });
    return { items: page.items, next: page.lastKey };
  }
}
