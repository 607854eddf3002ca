import {
  BatchGetCommand,
  BatchWriteCommand,
  paginateQuery,
  QueryCommand,
  type QueryCommandInput,
} from '@aws-sdk/lib-dynamodb';
import { documentClient } from '#shared/store/dynamo.ts';

export interface Page<T> {
  items: T[];
  lastKey?: Record<string, unknown>;
}

/** One Query page. */
export async function queryPage<T>(input: QueryCommandInput): Promise<Page<T>> {
  const out = await documentClient().send(new QueryCommand(input));
  return { items: (out.Items ?? []) as T[], lastKey: out.LastEvaluatedKey };
}

/**
 * One page of up to `limit` items of a Query whose FilterExpression applies after DynamoDB's read
 * limit: reads on (the page's size, then up to `rounds - 1` Queries of `Math.max(limit, 200)` items) until the page is full, so
 * a filter never answers an empty page while matches remain within that bound. A page cut inside a
 * Query ends at its last item: `keyNames` are the table's and the index's key attributes, the shape
 * of LastEvaluatedKey.
 */
export async function queryFilled<T>(
  input: QueryCommandInput,
  limit: number,
  keyNames: readonly string[],
  rounds = 10,
): Promise<Page<T>> {
  if (!input.FilterExpression) return queryPage({ ...input, Limit: limit });
  const items: T[] = [];
  let start = input.ExclusiveStartKey;
  for (let round = 0; round < rounds; round++) {
    // The first read is the page's own size (a filter that matches every item costs just the page); later ones read wider.
    const out = await documentClient().send(
      new QueryCommand({ ...input, Limit: round ? Math.max(limit, 200) : limit, ExclusiveStartKey: start }),
    );
    const found = (out.Items ?? []) as T[];
    const room = limit - items.length;
    items.push(...found.slice(0, room));
    if (found.length >= room) {
      const last = items.at(-1) as Record<string, unknown>;
      // Cut inside this Query (or exactly at its end): the next page starts after the last item taken.
      return {
        items,
        lastKey:
          found.length > room || out.LastEvaluatedKey
            ? Object.fromEntries(keyNames.map((k) => [k, last[k]]))
            : undefined,
      };
    }
    start = out.LastEvaluatedKey;
    if (!start) return { items };
  }
  return { items, lastKey: start };
}

/** Everything a Query matches, following LastEvaluatedKey (lib-dynamodb's paginator). */
export async function queryAll<T>(input: QueryCommandInput): Promise<T[]> {
  const items: T[] = [];
  for await (const page of paginateQuery({ client: documentClient() }, input))
    items.push(...((page.Items ?? []) as T[]));
  return items;
}

/** Counts what a Query matches, page by page (Select COUNT reads keys, returns no items). */
export async function queryCount(input: QueryCommandInput): Promise<number> {
  let total = 0;
  for await (const page of paginateQuery({ client: documentClient() }, { ...input, Select: 'COUNT' }))
    total += page.Count ?? 0;
  return total;
}

/** One turn of the event loop: I/O that arrived meanwhile (another user's request) is served first. */
export const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

/**
 * BatchWriteItem (puts) for any number of items, 25 a request, the requests in flight together; unprocessed
 * items are retried with back-off (bounded). Not atomic: the items become visible in any order.
 * Each request is built (marshalled, serialized, signed: about a millisecond of CPU for 25 events) in
 * a turn of the event loop of its own, so a batch of 100 events does not hold a shared loop (the local
 * server, where every user's requests run on one thread) for all four at once (docs/performance.md,
 * "Noisy neighbours").
 */
export async function batchPut(table: string, items: Record<string, unknown>[]): Promise<void> {
  const putChunk = async (chunk: Record<string, unknown>[]) => {
    let requests = chunk.map((Item) => ({ PutRequest: { Item } }));
    for (let attempt = 0; requests.length > 0 && attempt < 10; attempt++) {
      if (attempt) await new Promise((r) => setTimeout(r, 20 * 2 ** attempt));
      const out = await documentClient().send(new BatchWriteCommand({ RequestItems: { [table]: requests } }));
      requests = (out.UnprocessedItems?.[table] ?? []) as typeof requests;
    }
    if (requests.length) throw new Error('BatchWriteItem left items unprocessed after retries');
  };
  const sent: Promise<void>[] = [];
  for (let i = 0; i < items.length; i += 25) {
    if (i) await nextTurn();
    const put = putChunk(items.slice(i, i + 25));
    // Rejections are Promise.all's below; this only keeps one that fails while later chunks wait their turn from going unhandled.
    put.catch(() => {});
    sent.push(put);
  }
  await Promise.all(sent);
}

/**
 * BatchGetItem for any number of keys, 100 a request, retrying unprocessed keys with back-off
 * (bounded); returns the items found, keyed by `keyName`. `keyOf` builds the full key of an id
 * when the table's key has more than `keyName` (e.g. `{userId, id}`).
 */
export async function batchGet<T extends Record<string, unknown>, I extends string | number = string>(
  table: string,
  keyName: string,
  ids: readonly I[],
  keyOf: (id: I) => Record<string, unknown> = (id) => ({ [keyName]: id }),
): Promise<Map<I, T>> {
  const found = new Map<I, T>();
  let keys = [...new Set(ids)].map(keyOf);
  for (let attempt = 0; keys.length > 0 && attempt < 10; attempt++) {
    const batch = keys.slice(0, 100);
    const out = await documentClient().send(
      new BatchGetCommand({ RequestItems: { [table]: { Keys: batch, ConsistentRead: true } } }),
    );
    for (const item of out.Responses?.[table] ?? []) found.set(item[keyName] as I, item as T);
    const unprocessed = (out.UnprocessedKeys?.[table]?.Keys ?? []) as typeof keys;
    keys = [...unprocessed, ...keys.slice(100)];
    if (unprocessed.length) await new Promise((r) => setTimeout(r, 20 * 2 ** attempt));
  }
  if (keys.length) throw new Error('BatchGetItem left keys unprocessed after retries');
  return found;
}

/** Builds a FilterExpression from optional conditions, skipping the absent ones. */
export function filterExpression(
  conditions: [string, string, string, unknown][],
): Pick<QueryCommandInput, 'FilterExpression' | 'ExpressionAttributeNames' | 'ExpressionAttributeValues'> {
  const parts: string[] = [];
  const names: Record<string, string> = {};
  const values: Record<string, unknown> = {};
  conditions.forEach(([attr, op, placeholder, value], i) => {
    if (value === undefined) return;
    const name = `#f${i}`;
    names[name] = attr;
    values[placeholder] = value;
    parts.push(op === 'contains' ? `contains(${name}, ${placeholder})` : `${name} ${op} ${placeholder}`);
  });
  return parts.length
    ? { FilterExpression: parts.join(' AND '), ExpressionAttributeNames: names, ExpressionAttributeValues: values }
    : {};
}
