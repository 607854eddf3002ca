import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { api, query } from '../api.ts';
import { lineDiff } from '../diff.ts';
import { viewOf, type ActionView, type AnyEvent, type ObservationView, type TimelineItem } from '../events.ts';
import { followEvents, type FeedMode } from '../live.ts';
import { renderMarkdown } from '../markdown.ts';
import { chime } from '../sound.ts';
import { Badge, ErrorBox, Field, statusTone, useAction, useLoad, type Me } from '../ui.tsx';
import type { Answer } from '../../../shared/client/index.ts';

/**
 * A conversation as the API answers it (the typed client's type, generated from the OpenAPI document: the
 * search's items; the batch GET by ids answers the same view, or null for an unknown id).
 */
type Conversation = Answer<'/api/v1/app-conversations/search', 'get'>['items'][number];

/** Markdown from the agent, through the sanitizer: the only HTML this console inserts as HTML. */
function Markdown(props: { source: string }) {
  const html = useMemo(() => renderMarkdown(props.source), [props.source]);
  return <div class="markdown" dangerouslySetInnerHTML={{ __html: html }} />;
}

function Diff(props: { before: string; after: string }) {
  const rows = useMemo(() => lineDiff(props.before, props.after), [props.before, props.after]);
  return (
    <figure class="diff-figure" aria-label="Changes">
      <pre class="diff">
        {rows.map((r) =>
          r.op === '…' ? (
            <div class="fold">⋯ {r.skipped} unchanged lines</div>
          ) : (
            <div class={r.op === '+' ? 'add' : r.op === '-' ? 'del' : 'ctx'}>
              {r.op} {r.text}
            </div>
          ),
        )}
      </pre>
    </figure>
  );
}

function ActionBody(props: { action: ActionView; observation: ObservationView | null }) {
  const { action: a, observation: o } = props;
  switch (a.type) {
    case 'command':
      return (
        <>
          <pre class="command">
            <span aria-hidden="true">$ </span>
            {a.command}
          </pre>
          {o && !o.rejected && (
            <pre class={`output${o.isError ? ' failed' : ''}`}>
              {o.text}
              {o.exitCode !== null && o.exitCode !== 0 && <span class="exit">{`\n[exit code ${o.exitCode}]`}</span>}
            </pre>
          )}
        </>
      );
    case 'edit': {
      const before =
        o?.oldContent ?? (a.command === 'str_replace' ? (a.oldStr ?? '') : a.command === 'create' ? '' : null);
      const after =
        o?.newContent ??
        (a.command === 'str_replace' ? (a.newStr ?? '') : a.command === 'create' ? (a.fileText ?? '') : null);
      return (
        <>
          <p class="path">
            {a.command} <code>{a.path}</code>
          </p>
          {before !== null && after !== null && a.command !== 'view' ? (
            <Diff before={before} after={after} />
          ) : (
            o && <pre class="output">{o.text}</pre>
          )}
          {o?.isError && <pre class="output failed">{o.text}</pre>}
        </>
      );
    }
    case 'mcp':
      return (
        <>
          <pre class="args">{a.args}</pre>
          {o && !o.rejected && <pre class={`output${o.isError ? ' failed' : ''}`}>{o.text}</pre>}
        </>
      );
    case 'think':
      return <p class="thought">{a.text}</p>;
    case 'finish':
      return <Markdown source={a.message} />;
    default:
      return (
        <>
          <pre class="args">{a.args}</pre>
          {o && !o.rejected && <pre class={`output${o.isError ? ' failed' : ''}`}>{o.text}</pre>}
        </>
      );
  }
}

const TOOL_LABELS: Record<string, string> = {
  command: 'Command',
  edit: 'File edit',
  mcp: 'MCP call',
  think: 'Thought',
  finish: 'Finished',
};

function Item(props: { item: TimelineItem }) {
  const it = props.item;
  switch (it.kind) {
    case 'message':
      return (
        <article class={`event message ${it.role}`} aria-label={it.role === 'user' ? 'Your message' : 'Agent message'}>
          <header>{it.role === 'user' ? 'You' : 'Agent'}</header>
          {it.role === 'agent' ? <Markdown source={it.text} /> : <p class="plain">{it.text}</p>}
          {it.images.length > 0 && (
            <ul class="images" aria-label="Images">
              {it.images.map((u) => (
                <li>
                  <code>{u.length > 120 ? `${u.slice(0, 120)}…` : u}</code>
                </li>
              ))}
            </ul>
          )}
        </article>
      );
    case 'action':
      return (
        <article class={`event action ${it.action.type}`} aria-label={TOOL_LABELS[it.action.type] ?? `Tool ${it.tool}`}>
          <header>
            {TOOL_LABELS[it.action.type] ?? 'Tool'} <code>{it.tool}</code>
            {it.risk !== 'UNKNOWN' && (
              <Badge tone={it.risk === 'HIGH' ? 'bad' : it.risk === 'MEDIUM' ? 'warn' : ''}>risk {it.risk}</Badge>
            )}
            {it.observation?.rejected && <Badge tone="bad">rejected: {it.observation.rejected}</Badge>}
          </header>
          {it.reasoning && (
            <details class="reasoning">
              <summary>Reasoning</summary>
              <p class="thought">{it.reasoning}</p>
            </details>
          )}
          {it.thought && <p class="thought">{it.thought}</p>}
          <ActionBody action={it.action} observation={it.observation} />
        </article>
      );
    case 'error':
      return (
        <article class="event error" aria-label="Error">
          <header>{it.title}</header>
          <pre class="detail">{it.detail}</pre>
        </article>
      );
    case 'state':
      return <p class="event state">{it.text}</p>;
    default:
      return <p class="event system">{it.text}</p>;
  }
}

function Confirmation(props: { conversationId: string; pending: Extract<TimelineItem, { kind: 'action' }>[] }) {
  const [reason, setReason] = useState('');
  const respond = useAction(async (accept: boolean) => {
    await api('POST', `/api/conversations/${props.conversationId}/events/respond_to_confirmation`, {
      accept,
      reason: accept ? null : reason || null,
    });
    setReason('');
  });
  return (
    <section class="confirmation" aria-labelledby="confirm-title">
      <h2 id="confirm-title">Waiting for your confirmation</h2>
      {props.pending.map((p) => (
        <div class="pending">
          <p>
            {TOOL_LABELS[p.action.type] ?? 'Tool'} <code>{p.tool}</code>{' '}
            <Badge tone={p.risk === 'HIGH' ? 'bad' : p.risk === 'MEDIUM' ? 'warn' : ''}>risk {p.risk}</Badge>
          </p>
          <ActionBody action={p.action} observation={null} />
        </div>
      ))}
      <Field id="reject-reason" label="Reason (when rejecting)">
        <input id="reject-reason" type="text" value={reason} onInput={(e) => setReason(e.currentTarget.value)} />
      </Field>
      <div class="actions">
        <button type="button" disabled={respond.busy} onClick={() => void respond.call(true)}>
          Accept
        </button>
        <button type="button" class="danger" disabled={respond.busy} onClick={() => void respond.call(false)}>
          Reject
        </button>
      </div>
      <ErrorBox error={respond.error} />
    </section>
  );
}

const money = (n: number | null | undefined) => (typeof n === 'number' ? `$${n.toFixed(4)}` : '-');

export function ConversationPage(props: { id: string; me: Me }) {
  const { id } = props;
  const [events, setEvents] = useState<AnyEvent[]>([]);
  const [mode, setMode] = useState<FeedMode>('connecting');
  const conv = useLoad(
    () =>
      api<(Conversation | null)[]>('GET', `/api/v1/app-conversations${query({ ids: [id] })}`).then(([c]) => c ?? null),
    [id],
  );
  const view = useMemo(() => viewOf(events), [events]);
  useEffect(() => {
    setEvents([]);
    return followEvents(id, (fresh) => setEvents((all) => [...all, ...fresh]), setMode);
  }, [id]);
  // The conversation's record (sandbox status, metrics) refreshes every few seconds and on each state change.
  useEffect(() => {
    const t = setInterval(() => conv.reload(), 5000);
    return () => clearInterval(t);
  }, [id]);
  useEffect(() => conv.reload(), [view.executionStatus]);
  // A sound when the agent finishes or starts waiting, if the user asked for it.
  const lastStatus = useRef<string | null>(null);
  useEffect(() => {
    const before = lastStatus.current;
    lastStatus.current = view.executionStatus;
    if (!before || before === view.executionStatus) return;
    if (
      props.me.settings?.enable_sound_notifications === true &&
      ['finished', 'waiting_for_confirmation', 'error', 'stuck'].includes(view.executionStatus ?? '')
    )
      chime();
  }, [view.executionStatus]);
  // New events scroll into view when the reader is at the bottom already.
  const end = useRef<HTMLDivElement>(null);
  useEffect(() => {
    const el = end.current;
    if (el && innerHeight + scrollY >= document.body.scrollHeight - 200) el.scrollIntoView({ block: 'end' });
  }, [events.length]);

  const [message, setMessage] = useState('');
  const send = useAction(async () => {
    const text = message;
    await api('POST', `/api/conversations/${id}/events`, {
      role: 'user',
      content: [{ type: 'text', text }],
      run: true,
    });
    setMessage('');
  });
  const control = useAction(async (what: 'pause' | 'run') => {
    await api('POST', `/api/conversations/${id}/${what}`);
  });
  const c = conv.data;
  const sandbox = useAction(async (what: 'pause' | 'resume') => {
    await api('POST', `/api/v1/sandboxes/${c!.sandbox_id}/${what}`);
    conv.reload();
  });
  if (conv.error) return <ErrorBox error={conv.error} />;
  if (conv.data === null) return <p class="empty">No such conversation.</p>;
  const status = view.executionStatus ?? c?.execution_status ?? null;
  const m = view.metrics;
  const prompt = m.promptTokens ?? c?.metrics?.prompt_tokens ?? null;
  const completion = m.completionTokens ?? c?.metrics?.completion_tokens ?? null;
  const cost = m.cost ?? c?.metrics?.accumulated_cost ?? null;
  return (
    <section class="conversation">
      <div class="heading">
        <h1>{c?.title || id}</h1>
        <span class="feed" role="status" title="How this page receives events">
          {mode === 'live' ? 'live' : mode === 'polling' ? 'polling' : 'connecting…'}
        </span>
      </div>
      <dl class="facts">
        <div>
          <dt>Agent</dt>
          <dd>
            <Badge tone={statusTone(status)}>{status ?? '-'}</Badge>
          </dd>
        </div>
        <div>
          <dt>Sandbox</dt>
          <dd>
            <Badge tone={statusTone(c?.sandbox_status)}>{c?.sandbox_status ?? '-'}</Badge>{' '}
            {c?.sandbox_id && c.sandbox_status === 'RUNNING' && (
              <button
                type="button"
                class="secondary small"
                disabled={sandbox.busy}
                onClick={() => void sandbox.call('pause')}
              >
                Pause sandbox
              </button>
            )}
            {c?.sandbox_id &&
              (c.sandbox_status === 'PAUSED' || c.sandbox_status === 'MISSING' || c.sandbox_status === 'ERROR') && (
                <button
                  type="button"
                  class="secondary small"
                  disabled={sandbox.busy}
                  onClick={() => void sandbox.call('resume')}
                >
                  Resume sandbox
                </button>
              )}
          </dd>
        </div>
        <div>
          <dt>Tokens</dt>
          <dd>
            <span title="prompt / completion">
              {prompt ?? '-'} / {completion ?? '-'}
            </span>
          </dd>
        </div>
        <div>
          <dt>Cost</dt>
          <dd>
            {money(cost)}
            {m.budget !== null && ` of ${money(m.budget)}`}
          </dd>
        </div>
        <div>
          <dt>Model</dt>
          <dd>{c?.llm_model ?? '-'}</dd>
        </div>
        {c?.selected_repository && (
          <div>
            <dt>Repository</dt>
            <dd>
              {c.selected_repository}
              {c.selected_branch ? ` @ ${c.selected_branch}` : ''}
            </dd>
          </div>
        )}
      </dl>
      <ErrorBox error={sandbox.error} />
      <div class="timeline" role="log" aria-live="polite" aria-label="Events">
        {events.length === 0 && <p class="empty">No events yet.</p>}
        {view.items.map((item) => (
          <Item key={item.id} item={item} />
        ))}
        <div ref={end} />
      </div>
      {view.pending.length > 0 && <Confirmation conversationId={id} pending={view.pending} />}
      <form
        class="composer"
        onSubmit={(e) => {
          e.preventDefault();
          if (message.trim()) void send.call();
        }}
      >
        <Field id="composer" label="Message to the agent">
          <textarea
            id="composer"
            rows={3}
            value={message}
            onInput={(e) => setMessage(e.currentTarget.value)}
            onKeyDown={(e) => {
              if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) {
                e.preventDefault();
                if (message.trim()) void send.call();
              }
            }}
          />
        </Field>
        <div class="actions">
          <button type="submit" disabled={send.busy || !message.trim()}>
            Send
          </button>
          {status === 'running' ? (
            <button type="button" class="secondary" disabled={control.busy} onClick={() => void control.call('pause')}>
              Pause agent
            </button>
          ) : (
            <button type="button" class="secondary" disabled={control.busy} onClick={() => void control.call('run')}>
              Run agent
            </button>
          )}
          <small>Ctrl+Enter sends</small>
        </div>
        <ErrorBox error={send.error ?? control.error} />
      </form>
    </section>
  );
}
