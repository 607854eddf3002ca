import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { STRIPE_API_VERSION } from '#shared/billing/stripe.ts';
import { PROJECT_ROOT } from '#shared/wiring/local.ts';
import {
  meterListEventSummariesParams,
  meterListParams,
  meterEventSessionCreateParams,
  meterEventStreamCreateParams,
  meterEventStreamEvent,
} from '#test/helpers/stripe-fake.ts';

/**
 * The Stripe fake's schemas are the `stripe` package's parameter types: each interface's members (name and
 * whether optional) read from its .d.ts, compared with the schema's keys. A new or renamed parameter in a
 * package upgrade fails here, not in production.
 */
const dts = (file: string) => readFileSync(join(PROJECT_ROOT, 'node_modules/stripe/cjs/resources', file), 'utf8');

/** The members of `interface <name> { ... }` in a .d.ts: name -> optional. Nested braces are skipped. */
function members(source: string, name: string): Map<string, boolean> {
  const start = source.search(new RegExp(`interface ${name} (extends [\\w.]+ )?\\{`));
  if (start < 0) throw new Error(`No interface ${name}`);
  let depth = 0;
  let i = source.indexOf('{', start);
  const out = new Map<string, boolean>();
  let line = '';
  // The depth at the start of the current line: members are the lines that start at depth 1.
  let lineDepth = 1;
  for (i++, depth = 1; i < source.length; i++) {
    const ch = source[i]!;
    if (ch === '{') depth++;
    if (ch === '}') depth--;
    if (depth === 0) break;
    if (ch === '\n') {
      const m = lineDepth === 1 ? /^\s*([a-z_]+)(\??):/.exec(line) : null;
      if (m) out.set(m[1]!, m[2] === '?');
      line = '';
      lineDepth = depth;
    } else line += ch;
  }
  return out;
}
const schemaMembers = (shape: Record<string, { def?: { type?: string } }>) =>
  new Map(Object.entries(shape).map(([k, v]) => [k, v.def?.type === 'optional'] as const));

describe("the Stripe fake's schemas are the stripe package's parameter types", () => {
  it('meter event session and stream parameters, member for member', () => {
    const stream = dts('V2/Billing/MeterEventStream.d.ts');
    expect(schemaMembers(meterEventStreamCreateParams.shape)).toEqual(members(stream, 'MeterEventStreamCreateParams'));
    expect(schemaMembers(meterEventStreamEvent.shape)).toEqual(members(stream, 'Event'));
    expect(members(stream, 'Event')).toEqual(
      new Map([
        ['event_name', false],
        ['identifier', true],
        ['payload', false],
        ['timestamp', true],
      ]),
    );
    const session = dts('V2/Billing/MeterEventSession.d.ts');
    expect(schemaMembers(meterEventSessionCreateParams.shape)).toEqual(
      members(session, 'MeterEventSessionCreateParams'),
    );
    // The stream's documented limit, which the fake enforces.
    expect(stream).toMatch(/Supports up to 100 events per request/);
  });

  it('meter list and event summary parameters (v1 GETs), with the pagination parameters they extend', () => {
    const meters = dts('Billing/Meters.d.ts');
    const paging = members(
      readFileSync(join(PROJECT_ROOT, 'node_modules/stripe/cjs/shared.d.ts'), 'utf8'),
      'PaginationParams',
    );
    expect(meters).toMatch(/interface MeterListParams extends PaginationParams \{/);
    expect(meters).toMatch(/interface MeterListEventSummariesParams extends PaginationParams \{/);
    expect(schemaMembers(meterListParams.shape)).toEqual(new Map([...paging, ...members(meters, 'MeterListParams')]));
    expect(schemaMembers(meterListEventSummariesParams.shape)).toEqual(
      new Map([...paging, ...members(meters, 'MeterListEventSummariesParams')]),
    );
    expect(members(meters, 'MeterListEventSummariesParams')).toEqual(
      new Map([
        ['customer', false],
        ['end_time', false],
        ['start_time', false],
        ['expand', true],
        ['value_grouping_window', true],
      ]),
    );
  });

  it('speaks the API version the package pins', () => {
    expect(readFileSync(join(PROJECT_ROOT, 'node_modules/stripe/cjs/apiVersion.js'), 'utf8')).toContain(
      `ApiVersion = '${STRIPE_API_VERSION}'`,
    );
  });
});
