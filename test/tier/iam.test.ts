import { describe, expect, it } from 'vitest';
import { dynamoAuthz } from '#test/tier/aws.ts';
import { matchesPattern } from '#test/tier/events.ts';
import { evaluate, wildcard, type Statement } from '#test/tier/iam.ts';
import { crossCheck, crossCheckFindings, simulate, useKeyPolicies } from '#test/tier/iam-crosscheck.ts';

const TABLE = 'arn:aws:dynamodb:eu-west-1:123456789012:table/S-keys';
const CLUSTER = 'arn:aws:ecs:eu-west-1:123456789012:cluster/S-cluster';
const allow = (s: Omit<Statement, 'Effect'>): Statement => ({ Effect: 'Allow', ...s });

describe('the tier IAM evaluator', () => {
  it('allows only what a statement names: action (case-insensitive) and resource', () => {
    const policy = [
      allow({ Action: ['dynamodb:GetItem', 'dynamodb:Query'], Resource: [TABLE, `${TABLE}/index/byUser`] }),
    ];
    expect(evaluate(policy, { action: 'dynamodb:GetItem', resource: TABLE }).allowed).toBe(true);
    expect(evaluate(policy, { action: 'DynamoDB:getitem', resource: TABLE }).allowed).toBe(true);
    expect(evaluate(policy, { action: 'dynamodb:PutItem', resource: TABLE }).allowed).toBe(false);
    expect(evaluate(policy, { action: 'dynamodb:Query', resource: `${TABLE}/index/byUser` }).allowed).toBe(true);
    // An index not listed, and another table whose name starts alike, are denied.
    expect(evaluate(policy, { action: 'dynamodb:Query', resource: `${TABLE}/index/other` }).allowed).toBe(false);
    expect(evaluate(policy, { action: 'dynamodb:GetItem', resource: `${TABLE}2` }).allowed).toBe(false);
    expect(evaluate(policy, { action: 'dynamodb:GetItem', resource: TABLE }).reason).toMatch(/allowed by/);
    expect(evaluate([], { action: 'dynamodb:GetItem', resource: TABLE }).reason).toMatch(/implicit deny/);
  });

  it('matches wildcards as IAM does: * across separators, ? one character, resources case-sensitive', () => {
    expect(
      wildcard(
        'arn:aws:ecs:*:*:task-definition/S-sandbox-*:*',
        'arn:aws:ecs:eu-west-1:1:task-definition/S-sandbox-default-sandbox:12',
      ),
    ).toBe(true);
    expect(
      wildcard(
        'arn:aws:ecs:*:*:task-definition/S-sandbox-*:*',
        'arn:aws:ecs:eu-west-1:1:task-definition/Other-default:12',
      ),
    ).toBe(false);
    expect(wildcard('task/c/?', 'task/c/a')).toBe(true);
    expect(wildcard('task/c/?', 'task/c/ab')).toBe(false);
    expect(wildcard('Table', 'table')).toBe(false);
    expect(wildcard('a.b', 'axb')).toBe(false);
  });

  it('an explicit Deny wins over any Allow; NotAction and NotResource invert', () => {
    const policy: Statement[] = [
      allow({ Action: 'ecs:*', Resource: '*' }),
      { Effect: 'Deny', Action: 'ecs:StopTask', Resource: '*' },
    ];
    expect(evaluate(policy, { action: 'ecs:RunTask', resource: 'x' }).allowed).toBe(true);
    expect(evaluate(policy, { action: 'ecs:StopTask', resource: 'x' })).toMatchObject({
      allowed: false,
      reason: /explicitly denied/,
    });
    expect(
      evaluate([allow({ NotAction: 'iam:*', Resource: '*' })], { action: 'iam:PassRole', resource: 'r' }).allowed,
    ).toBe(false);
    expect(
      evaluate([allow({ Action: '*', NotResource: 'secret' })], { action: 's3:GetObject', resource: 'secret' }).allowed,
    ).toBe(false);
  });

  describe('conditions', () => {
    const runTask = allow({
      Action: 'ecs:RunTask',
      Resource: '*',
      Condition: { ArnEquals: { 'ecs:cluster': CLUSTER } },
    });
    const tagOnCreate = allow({
      Action: 'ecs:TagResource',
      Resource: '*',
      Condition: { StringEquals: { 'ecs:CreateAction': 'RunTask' } },
    });

    it('ecs:cluster: only in the named cluster, and a request without the key is denied', () => {
      expect(
        evaluate([runTask], { action: 'ecs:RunTask', resource: 'td', context: { 'ecs:cluster': CLUSTER } }).allowed,
      ).toBe(true);
      expect(
        evaluate([runTask], { action: 'ecs:RunTask', resource: 'td', context: { 'ecs:cluster': `${CLUSTER}-other` } })
          .allowed,
      ).toBe(false);
      expect(evaluate([runTask], { action: 'ecs:RunTask', resource: 'td' }).allowed).toBe(false);
    });

    it('ecs:CreateAction: tag-on-create for one creating action does not cover another', () => {
      expect(
        evaluate([tagOnCreate], {
          action: 'ecs:TagResource',
          resource: 't',
          context: { 'ecs:CreateAction': 'RunTask' },
        }).allowed,
      ).toBe(true);
      expect(
        evaluate([tagOnCreate], {
          action: 'ecs:TagResource',
          resource: 't',
          context: { 'ecs:CreateAction': 'RegisterTaskDefinition' },
        }).allowed,
      ).toBe(false);
      // A plain TagResource call (no creating action) is not covered either.
      expect(evaluate([tagOnCreate], { action: 'ecs:TagResource', resource: 't' }).allowed).toBe(false);
    });

    it('iam:PassedToService, StringLike, IfExists, Null, Bool, multi-valued keys and negated operators', () => {
      const pass = allow({
        Action: 'iam:PassRole',
        Resource: 'arn:aws:iam::1:role/task',
        Condition: { StringEquals: { 'iam:PassedToService': 'ecs-tasks.amazonaws.com' } },
      });
      expect(
        evaluate([pass], {
          action: 'iam:PassRole',
          resource: 'arn:aws:iam::1:role/task',
          context: { 'iam:PassedToService': 'ecs-tasks.amazonaws.com' },
        }).allowed,
      ).toBe(true);
      expect(
        evaluate([pass], {
          action: 'iam:PassRole',
          resource: 'arn:aws:iam::1:role/task',
          context: { 'iam:PassedToService': 'lambda.amazonaws.com' },
        }).allowed,
      ).toBe(false);
      expect(
        evaluate([pass], {
          action: 'iam:PassRole',
          resource: 'arn:aws:iam::1:role/admin',
          context: { 'iam:PassedToService': 'ecs-tasks.amazonaws.com' },
        }).allowed,
      ).toBe(false);

      const tagged = allow({
        Action: 'ecs:StopTask',
        Resource: '*',
        Condition: { StringLike: { 'aws:ResourceTag/sandbox-id': 'sb-*' } },
      });
      expect(
        evaluate([tagged], { action: 'ecs:StopTask', resource: 't', context: { 'aws:ResourceTag/sandbox-id': 'sb-1' } })
          .allowed,
      ).toBe(true);
      expect(
        evaluate([tagged], { action: 'ecs:StopTask', resource: 't', context: { 'aws:ResourceTag/sandbox-id': 'x-1' } })
          .allowed,
      ).toBe(false);

      const ifExists = allow({ Action: 'a:b', Resource: '*', Condition: { StringEqualsIfExists: { 'k:x': 'v' } } });
      expect(evaluate([ifExists], { action: 'a:b', resource: 'r' }).allowed).toBe(true);
      expect(evaluate([ifExists], { action: 'a:b', resource: 'r', context: { 'k:x': 'w' } }).allowed).toBe(false);

      const mustHaveTags = allow({ Action: 'a:b', Resource: '*', Condition: { Null: { 'aws:TagKeys': 'false' } } });
      expect(
        evaluate([mustHaveTags], { action: 'a:b', resource: 'r', context: { 'aws:TagKeys': ['x'] } }).allowed,
      ).toBe(true);
      expect(evaluate([mustHaveTags], { action: 'a:b', resource: 'r' }).allowed).toBe(false);

      const tls = allow({ Action: 'a:b', Resource: '*', Condition: { Bool: { 'aws:SecureTransport': 'true' } } });
      expect(
        evaluate([tls], { action: 'a:b', resource: 'r', context: { 'aws:SecureTransport': 'false' } }).allowed,
      ).toBe(false);

      const onlyKeys = allow({
        Action: 'a:b',
        Resource: '*',
        Condition: { 'ForAllValues:StringEquals': { 'aws:TagKeys': ['sandbox-id', 'user-id'] } },
      });
      expect(
        evaluate([onlyKeys], { action: 'a:b', resource: 'r', context: { 'aws:TagKeys': ['sandbox-id'] } }).allowed,
      ).toBe(true);
      expect(
        evaluate([onlyKeys], { action: 'a:b', resource: 'r', context: { 'aws:TagKeys': ['sandbox-id', 'owner'] } })
          .allowed,
      ).toBe(false);

      const notOther = allow({ Action: 'a:b', Resource: '*', Condition: { StringNotEquals: { 'k:x': ['a', 'b'] } } });
      expect(evaluate([notOther], { action: 'a:b', resource: 'r', context: { 'k:x': 'c' } }).allowed).toBe(true);
      expect(evaluate([notOther], { action: 'a:b', resource: 'r', context: { 'k:x': 'b' } }).allowed).toBe(false);
    });

    it('all keys of a block must hold; an unknown operator throws rather than guess', () => {
      const both = allow({ Action: 'a:b', Resource: '*', Condition: { StringEquals: { 'k:x': '1', 'k:y': '2' } } });
      expect(evaluate([both], { action: 'a:b', resource: 'r', context: { 'k:x': '1', 'k:y': '2' } }).allowed).toBe(
        true,
      );
      expect(evaluate([both], { action: 'a:b', resource: 'r', context: { 'k:x': '1' } }).allowed).toBe(false);
      const odd = allow({
        Action: 'a:b',
        Resource: '*',
        Condition: { DateGreaterThan: { 'aws:CurrentTime': '2020-01-01' } },
      });
      expect(() => evaluate([odd], { action: 'a:b', resource: 'r', context: { 'aws:CurrentTime': 'x' } })).toThrow(
        /does not know/,
      );
    });
  });

  it('DynamoDB operations authorize every table and index they touch', () => {
    expect(dynamoAuthz('Query', { TableName: 'S-keys', IndexName: 'byUser' })).toEqual([
      { action: 'dynamodb:Query', resource: `${TABLE}/index/byUser` },
    ]);
    expect(
      dynamoAuthz('BatchWriteItem', { RequestItems: { 'S-keys': [], 'S-events': [] } }).map((r) => r.resource),
    ).toEqual([TABLE, TABLE.replace('S-keys', 'S-events')]);
    expect(
      dynamoAuthz('TransactWriteItems', {
        TransactItems: [{ Put: { TableName: 'S-keys' } }, { ConditionCheck: { TableName: 'S-keys' } }],
      }).map((r) => r.action),
    ).toEqual(['dynamodb:PutItem', 'dynamodb:ConditionCheckItem']);
  });
});

describe('EventBridge pattern matching', () => {
  const pattern = {
    source: ['aws.ecs'],
    'detail-type': ['ECS Task State Change'],
    detail: { clusterArn: [CLUSTER], lastStatus: ['STOPPED'] },
  };
  const event = (detail: object) => ({
    source: 'aws.ecs',
    'detail-type': 'ECS Task State Change',
    detail: { clusterArn: CLUSTER, ...detail },
  });
  it('matches the rule only for stopped tasks of the cluster', () => {
    expect(matchesPattern(pattern, event({ lastStatus: 'STOPPED' }))).toBe(true);
    expect(matchesPattern(pattern, event({ lastStatus: 'RUNNING' }))).toBe(false);
    expect(matchesPattern(pattern, event({ lastStatus: 'STOPPED', clusterArn: `${CLUSTER}x` }))).toBe(false);
    expect(matchesPattern(pattern, { ...event({ lastStatus: 'STOPPED' }), source: 'custom' })).toBe(false);
    expect(
      matchesPattern(
        { detail: { stopCode: [{ 'anything-but': 'UserInitiated' }] } },
        event({ stopCode: 'SpotInterruption' }),
      ),
    ).toBe(true);
    expect(() => matchesPattern({ detail: { n: [{ numeric: ['>', 1] }] } }, event({ n: 2 }))).toThrow(/not emulated/);
  });
});

describe('the cross-check with iam-simulate (AWS authorization data): where the two differed, AWS documentation decides', () => {
  const KEY = 'arn:aws:kms:eu-west-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab';
  /** CDK's default key policy: the account's IAM policies decide. */
  const delegateToIam = () =>
    useKeyPolicies([
      {
        arn: KEY,
        policy: {
          Version: '2012-10-17',
          Statement: [
            { Effect: 'Allow', Principal: { AWS: 'arn:aws:iam::123456789012:root' }, Action: 'kms:*', Resource: '*' },
          ],
        },
      },
    ]);

  it('fails on a decision that differs from the library (the check itself can fail)', async () => {
    await crossCheckFindings();
    const policy = [allow({ Action: 'dynamodb:GetItem', Resource: TABLE })];
    crossCheck(policy, { action: 'dynamodb:GetItem', resource: TABLE }, { allowed: false, reason: 'a wrong answer' });
    crossCheck(policy, { action: 'dynamodb:PutItem', resource: TABLE }, { allowed: false, reason: 'implicit deny' });
    const found = await crossCheckFindings();
    expect(found.map((f) => [f.request.action, f.ours, f.theirs])).toEqual([['dynamodb:GetItem', false, 'Allowed']]);
  });

  // https://docs.aws.amazon.com/kms/latest/developerguide/key-policies.html: "Unless the key policy explicitly
  // allows it, you cannot use IAM policies to allow access to a KMS key." The tier's evaluator reads identity
  // policies only, so the cross-check judges every KMS call with the template's key policy (CDK's default
  // delegates to the account: `arn:aws:iam::<account>:root`, kms:*).
  it('a KMS key is usable only if its key policy allows it or delegates to IAM', async () => {
    const policy = [allow({ Action: 'kms:Encrypt', Resource: KEY })];
    const request = { action: 'kms:Encrypt', resource: KEY };
    expect((await simulate(policy, request)).result).toBe('ImplicitlyDenied');
    delegateToIam();
    expect((await simulate(policy, request)).result).toBe('Allowed');
    expect(evaluate(policy, request).allowed).toBe(true);
  });

  // https://docs.aws.amazon.com/kms/latest/developerguide/conditions-kms.html#conditions-kms-encryption-context:
  // `kms:EncryptionContext:context-key` applies to Encrypt and Decrypt, and ours judges it so. iam-simulate
  // 0.1.173 drops a key whose variable follows a colon (it matches `aws:RequestTag/<key>` only): a known gap of
  // the library, not reported as a key that does not apply. No grant of the stack conditions on one (seal and
  // unseal are unconditioned); one that did would show as a difference, as this condition does.
  it('kms:EncryptionContext:<key>: ours judges the condition; the library cannot (a gap in it, documented)', async () => {
    const policy = [
      allow({
        Action: 'kms:Decrypt',
        Resource: KEY,
        Condition: { StringEquals: { 'kms:EncryptionContext:owner': 'alice' } },
      }),
    ];
    const request = (owner: string) => ({
      action: 'kms:Decrypt',
      resource: KEY,
      context: { 'kms:EncryptionContext:owner': owner },
    });
    expect(evaluate(policy, request('alice')).allowed).toBe(true);
    expect(evaluate(policy, request('bob')).allowed).toBe(false);
    // The library, with the key policy that delegates to IAM, never sees the key: denied for both.
    delegateToIam();
    expect(await simulate(policy, request('alice'))).toEqual({ result: 'ImplicitlyDenied' });
    expect(await simulate([allow({ Action: 'kms:Decrypt', Resource: KEY })], request('bob'))).toEqual({
      result: 'Allowed',
    });
  });

  // https://docs.aws.amazon.com/service-authorization/latest/reference/list_amazonelasticcontainerservice.html:
  // TagResource's condition keys are aws:RequestTag/${TagKey}, aws:ResourceTag/${TagKey}, aws:TagKeys and
  // ecs:CreateAction, not ecs:cluster. The fake ECS passed ecs:cluster with the tag-on-create of RunTask, so a
  // grant conditioned on it passed in the tier and would fail on AWS; the cross-check found it, and it is gone.
  it('ecs:TagResource carries no ecs:cluster (the library names a key that does not apply)', async () => {
    const task = 'arn:aws:ecs:eu-west-1:123456789012:task/S-cluster/0123456789abcdef0123456789abcdef';
    const policy = [allow({ Action: 'ecs:TagResource', Resource: '*' })];
    const context = { 'ecs:CreateAction': 'RunTask', 'ecs:cluster': CLUSTER };
    expect(await simulate(policy, { action: 'ecs:TagResource', resource: task, context })).toEqual({
      result: 'Allowed',
      ignoredContextKeys: ['ecs:cluster'],
    });
  });
});
