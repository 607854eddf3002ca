import { useState } from 'preact/hooks';
import { api, query } from '../api.ts';
import { Badge, ErrorBox, Table, useLoad } from '../ui.tsx';
import type { Answer } from '../../../shared/client/index.ts';

/** The API's own types (the typed client's, generated from the OpenAPI document). */
type Usage = Answer<'/api/v1/usage', 'get'>;
type Limits = NonNullable<Usage['limits']>;
type Notices = Answer<'/api/v1/notifications', 'get'>;
/** A row of figures (by day or by user; the answer's `group_by` says which key each row has). */
type Figures = Extract<Usage['items'][number], { vcpu_seconds: number }>;
type DayItem = Figures & { day: string };
type UserItem = Figures & { user_id: string };

/** USD as the ledger keeps it (micro-dollars): 2 to 6 decimals, never rounded away. */
const dollars = (n: number) =>
  `${n < 0 ? '-' : ''}$${Math.abs(n)
    .toFixed(6)
    .replace(/0{1,4}$/, '')}`;
const today = () => new Date().toISOString().slice(0, 10);
const monthStart = () => `${today().slice(0, 8)}01`;
/** Every day from `from` to `to` (inclusive): a day without usage is a gap in the chart, not a missing column. */
function daysOf(from: string, to: string): string[] {
  const out: string[] = [];
  for (let t = Date.parse(`${from}T00:00:00Z`); t <= Date.parse(`${to}T00:00:00Z`); t += 86_400_000)
    out.push(new Date(t).toISOString().slice(0, 10));
  return out;
}

/**
 * Cost per day as stacked columns, inline SVG (no chart library): compute below, platform LLM, then
 * workspace storage above. Each column has a title (the day and its figures) for pointers and a table
 * below it for everyone else.
 */
function DayChart(props: { items: DayItem[]; from: string; to: string }) {
  const byDay = new Map(props.items.map((i) => [i.day, i]));
  const days = daysOf(props.from, props.to);
  const max = Math.max(
    0.000001,
    ...props.items.map((i) => i.compute_cost_usd + i.llm_cost_usd + (i.storage_cost_usd ?? 0)),
  );
  const W = 640;
  const H = 160;
  const step = W / Math.max(1, days.length);
  const bar = Math.max(2, step * 0.7);
  const y = (v: number) => (v / max) * (H - 10);
  return (
    <figure class="chart">
      <svg
        viewBox={`0 0 ${W} ${H + 18}`}
        role="img"
        aria-label={`Cost per day from ${props.from} to ${props.to}, highest ${dollars(max)}`}
      >
        <line class="axis" x1="0" y1={H} x2={W} y2={H} />
        {days.map((d, i) => {
          const item = byDay.get(d);
          const compute = y(item?.compute_cost_usd ?? 0);
          const llm = y(item?.llm_cost_usd ?? 0);
          const storage = y(item?.storage_cost_usd ?? 0);
          const x = i * step + (step - bar) / 2;
          return (
            <g>
              <title>{`${d}: compute ${dollars(item?.compute_cost_usd ?? 0)}, LLM ${dollars(item?.llm_cost_usd ?? 0)}, storage ${dollars(item?.storage_cost_usd ?? 0)}`}</title>
              <rect class="compute" x={x} y={H - compute} width={bar} height={compute} />
              <rect class="llm" x={x} y={H - compute - llm} width={bar} height={llm} />
              <rect class="storage" x={x} y={H - compute - llm - storage} width={bar} height={storage} />
              {(i === 0 || i === days.length - 1 || d.endsWith('-15')) && (
                <text x={x + bar / 2} y={H + 14} text-anchor="middle">
                  {d.slice(5)}
                </text>
              )}
            </g>
          );
        })}
      </svg>
      <figcaption>
        <span class="key compute" /> Compute <span class="key llm" /> Platform LLM <span class="key storage" />{' '}
        Workspace storage
      </figcaption>
    </figure>
  );
}

/** One limit as a bar: used of allowed, red at 100%, amber from 80%. */
function LimitBar(props: { label: string; used: number; limit: number; unit: string; id: string }) {
  const share = props.limit > 0 ? Math.min(1, props.used / props.limit) : props.used > 0 ? 1 : 0;
  const tone = share >= 1 ? 'bad' : share >= 0.8 ? 'warn' : 'ok';
  const fmt = (n: number) => (props.unit === 'USD' ? dollars(n) : `${n} h`);
  return (
    <div class="limit" data-limit={props.id}>
      <div class="limit-label">
        <span>{props.label}</span>
        <span class="limit-figures">
          {fmt(props.used)} of {fmt(props.limit)}
        </span>
      </div>
      <svg
        class="limit-bar"
        viewBox="0 0 100 8"
        preserveAspectRatio="none"
        role="img"
        aria-label={`${props.label}: ${Math.round(share * 100)}%`}
      >
        <rect class="track" x="0" y="0" width="100" height="8" />
        <rect class={`fill ${tone}`} x="0" y="0" width={share * 100} height="8" />
      </svg>
    </div>
  );
}

function LimitBars(props: { limits: Limits }) {
  const l = props.limits;
  const c = l.credits;
  return (
    <div class="group limits">
      <h2>
        Plan <code>{l.plan}</code> in {l.month}
        {l.on_limit === 'warn' && <Badge tone="warn">warn only</Badge>}
        {l.prepaid && <Badge>prepaid</Badge>}
      </h2>
      <LimitBar
        id="hours"
        label="Sandbox hours"
        used={l.sandbox_hours_used}
        limit={l.sandbox_hours_per_month}
        unit="h"
      />
      <LimitBar id="spend" label="Spend" used={l.spend_used_usd} limit={l.monthly_spend_usd} unit="USD" />
      {c && (
        <>
          <LimitBar id="credits" label="Credits spent" used={c.spent_usd} limit={c.total_granted_usd} unit="USD" />
          <p class="hint" data-testid="credit-balance">
            Balance {dollars(c.balance_usd)}
            {c.since ? ` (credits since ${c.since})` : ''}
          </p>
        </>
      )}
    </div>
  );
}

function NoticeList() {
  const list = useLoad(() => api<Notices>('GET', '/api/v1/notifications?limit=20'), []);
  if (list.error) return <ErrorBox error={list.error} />;
  if (!list.data) return null;
  return (
    <div class="group">
      <h2>Notifications</h2>
      {list.data.items.length === 0 ? (
        <p class="empty">None: you are told here when usage reaches 80% and 100% of a limit.</p>
      ) : (
        <Table caption="Usage notifications, newest first" columns={['When', 'Limit', 'Reached', 'Used']}>
          {list.data.items.map((n) => (
            <tr>
              <td>{n.at.slice(0, 16).replace('T', ' ')}</td>
              <td>{n.limit.replace(/_/g, ' ')}</td>
              <td>
                <Badge tone={n.threshold >= 100 ? 'bad' : 'warn'}>{n.threshold}%</Badge>
              </td>
              <td>
                {n.unit === 'USD' ? dollars(n.used) : `${n.used} h`} of{' '}
                {n.unit === 'USD' ? dollars(n.limit_value) : `${n.limit_value} h`}
              </td>
            </tr>
          ))}
        </Table>
      )}
    </div>
  );
}

const isDay = (s: string | undefined): s is string => !!s && /^\d{4}-\d{2}-\d{2}$/.test(s);

/**
 * `#/usage` (this month) or `#/usage/<from>/<to>`: the ledger per day as a chart, the plan's limits as
 * bars, and for owners and admins the usage per member and the notifications.
 */
export function UsagePage(props: { from?: string; to?: string }) {
  const [from, setFrom] = useState(isDay(props.from) ? props.from : monthStart());
  const [to, setTo] = useState(isDay(props.to) ? props.to : today());
  const days = useLoad(() => api<Usage>('GET', `/api/v1/usage${query({ from, to })}`), [from, to]);
  const manager = days.data?.scope === 'organization';
  const users = useLoad(
    () =>
      manager ? api<Usage>('GET', `/api/v1/usage${query({ from, to, group_by: 'user' })}`) : Promise.resolve(undefined),
    [from, to, manager],
  );
  const total = days.data?.total;
  return (
    <section>
      <div class="heading">
        <h1>Usage</h1>
        <div class="row">
          <label>
            From <input type="date" value={from} max={to} onChange={(e) => setFrom(e.currentTarget.value)} />
          </label>
          <label>
            To <input type="date" value={to} min={from} onChange={(e) => setTo(e.currentTarget.value)} />
          </label>
        </div>
      </div>
      <ErrorBox error={days.error} />
      {days.data && total && (
        <>
          <p class="notice">{manager ? "Your organization's usage" : 'Your usage'}, in USD.</p>
          <dl class="facts">
            <div>
              <dt>Total</dt>
              <dd data-testid="usage-total">{dollars(total.total_cost_usd)}</dd>
            </div>
            <div>
              <dt>Compute</dt>
              <dd data-testid="usage-compute">{dollars(total.compute_cost_usd)}</dd>
            </div>
            <div>
              <dt>Platform LLM</dt>
              <dd>{dollars(total.llm_cost_usd)}</dd>
            </div>
            <div>
              <dt>Storage (GB-hours)</dt>
              <dd data-testid="usage-storage">
                {dollars(total.storage_cost_usd)} ({total.storage_gb_hours})
              </dd>
            </div>
            {total.correction_usd !== 0 && (
              <div>
                <dt>Corrections</dt>
                <dd data-testid="usage-corrections">{dollars(total.correction_usd)}</dd>
              </div>
            )}
            <div>
              <dt>vCPU hours</dt>
              <dd>{(total.vcpu_seconds / 3600).toFixed(3)}</dd>
            </div>
            <div>
              <dt>LLM tokens in / out</dt>
              <dd>
                {total.llm_input_tokens} / {total.llm_output_tokens}
              </dd>
            </div>
          </dl>
          <DayChart items={days.data.items as DayItem[]} from={from} to={to} />
          {days.data.limits && <LimitBars limits={days.data.limits} />}
        </>
      )}
      {manager && users.data && (
        <div class="group">
          <h2>Per member</h2>
          <ErrorBox error={users.error} />
          {users.data.items.length === 0 ? (
            <p class="empty">No usage in this range.</p>
          ) : (
            <Table caption="Usage per member" columns={['Member', 'Compute', 'Platform LLM', 'Total']}>
              {(users.data.items as UserItem[]).map((u) => (
                <tr>
                  <td>
                    <code>{u.user_id}</code>
                  </td>
                  <td>{dollars(u.compute_cost_usd)}</td>
                  <td>{dollars(u.llm_cost_usd)}</td>
                  <td>{dollars(u.total_cost_usd)}</td>
                </tr>
              ))}
            </Table>
          )}
        </div>
      )}
      {manager && <NoticeList />}
    </section>
  );
}
