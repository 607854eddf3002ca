import type { TestStack } from '#test/helpers/stack.ts';

/**
 * The JSON body of a request to the stack, or an error naming the request: a benchmark stops at the
 * first surprise instead of timing failures.
 */
export async function json(stack: TestStack, method: string, path: string, options: { key?: string; body?: unknown } = {}): Promise<any> {
  const res = await stack.call(method, path, options);
  if (res.status < 200 || res.status > 299) throw new Error(`${method} ${path}: HTTP ${res.status} ${res.text.slice(0, 500)}`);
  return res.body;
}
