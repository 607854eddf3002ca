import { GetCommand, PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { AccountStore, AuditReader, AuditStore } from '#shared/accounts/account-store.ts';
import type { AuditEntry, InvitationRecord, OrgRecord, UserRecord } from '#shared/accounts/model.ts';
import { conditionalWrite, documentClient, tableName } from '#shared/store/dynamo.ts';
import { queryAll, queryPage } from '#shared/store/query.ts';

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
          Item: record,
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
          Item: { ...record, version: record.version + 1 },
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
          Item: record,
          ConditionExpression: 'attribute_not_exists(orgId)',
        }),
      ),
    );
  }

  replaceOrg(record: OrgRecord): Promise<boolean> {
    // The owner count is not the replacer's to set: it is kept as stored (adjustOwners alone moves it).
    const { owners: _owners, ...rest } = record;
    const names = Object.keys(rest).filter((k) => k !== 'orgId' && k !== 'version');
    return conditionalWrite(() =>
      this.db.send(
        new UpdateCommand({
          TableName: tableName('orgs'),
          Key: { orgId: record.orgId },
          UpdateExpression: `SET ${names.map((_n, i) => `#n${i} = :v${i}`).join(', ')}, version = :next`,
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
