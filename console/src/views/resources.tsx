import { useState } from 'preact/hooks';
import { api } from '../api.ts';
import {
  Ago,
  Badge,
  described,
  ErrorBox,
  Field,
  fieldErrors,
  statusTone,
  submitting,
  Table,
  useAction,
  useLoad,
} from '../ui.tsx';
import type { Answer } from '../../../shared/client/index.ts';

/** The API's own types (the typed client's, generated from the OpenAPI document). */
type Sandbox = Answer<'/api/v1/sandboxes/search', 'get'>['items'][number];

export function SandboxesPage() {
  const list = useLoad(() => api<{ items: Sandbox[] }>('GET', '/api/v1/sandboxes/search?limit=100'), []);
  const act = useAction(async (id: string, what: 'pause' | 'resume' | 'delete') => {
    if (what === 'delete' && !confirm(`Delete sandbox ${id} and its workspace?`)) return;
    await api(
      what === 'delete' ? 'DELETE' : 'POST',
      what === 'delete' ? `/api/v1/sandboxes/${id}` : `/api/v1/sandboxes/${id}/${what}`,
    );
    list.reload();
  });
  return (
    <section>
      <div class="heading">
        <h1>Sandboxes</h1>
        <button type="button" class="secondary" onClick={() => list.reload()}>
          Refresh
        </button>
      </div>
      <ErrorBox error={list.error ?? act.error} />
      {list.data && list.data.items.length === 0 && (
        <p class="empty">No sandboxes. Starting a conversation starts one.</p>
      )}
      {list.data && list.data.items.length > 0 && (
        <Table
          caption="Your sandboxes, newest first"
          columns={['Sandbox', 'Status', 'Spec', 'Age', 'Last activity', 'Actions']}
        >
          {list.data.items.map((s) => (
            <tr>
              <td>
                <code>{s.id}</code>
                {s.contained === false && <Badge tone="warn">uncontained</Badge>}
              </td>
              <td>
                <Badge tone={statusTone(s.status)}>{s.status}</Badge>
                {s.detail && <small class="detail">{s.detail}</small>}
              </td>
              <td>{s.sandbox_spec_id}</td>
              <td>
                <Ago at={s.created_at} />
              </td>
              <td>
                <Ago at={s.last_activity_at} />
              </td>
              <td class="actions">
                {s.status === 'RUNNING' || s.status === 'STARTING' ? (
                  <button
                    type="button"
                    class="secondary small"
                    disabled={act.busy}
                    aria-label={`Pause sandbox ${s.id}`}
                    onClick={() => void act.call(s.id, 'pause')}
                  >
                    Pause
                  </button>
                ) : (
                  <button
                    type="button"
                    class="secondary small"
                    disabled={act.busy}
                    aria-label={`Resume sandbox ${s.id}`}
                    onClick={() => void act.call(s.id, 'resume')}
                  >
                    Resume
                  </button>
                )}
                <button
                  type="button"
                  class="danger small"
                  disabled={act.busy}
                  aria-label={`Delete sandbox ${s.id}`}
                  onClick={() => void act.call(s.id, 'delete')}
                >
                  Delete
                </button>
              </td>
            </tr>
          ))}
        </Table>
      )}
    </section>
  );
}

type Spec = Answer<'/api/v1/sandbox-specs/search', 'get'>['items'][number];

export function SpecsPage() {
  const list = useLoad(() => api<{ items: Spec[] }>('GET', '/api/v1/sandbox-specs/search?limit=100'), []);
  return (
    <section>
      <h1>Sandbox specs</h1>
      <p class="hint">The sandbox templates this deployment offers; the first is the default.</p>
      <ErrorBox error={list.error} />
      {list.data && (
        <Table
          caption="Sandbox specs"
          columns={['Spec', 'Command', 'Working directory', 'CPU / memory', 'Environment']}
        >
          {list.data.items.map((s) => (
            <tr>
              <td>
                <code>{s.id}</code>
              </td>
              <td>
                <code>{(s.command ?? []).join(' ') || '-'}</code>
              </td>
              <td>
                <code>{s.working_dir}</code>
              </td>
              <td>
                {s.cpu ?? '-'} / {s.memory ?? '-'}
              </td>
              <td>{Object.keys(s.initial_env ?? {}).join(', ') || '-'}</td>
            </tr>
          ))}
        </Table>
      )}
    </section>
  );
}

type Key = Answer<'/api/keys', 'get'>[number];

export function KeysPage() {
  const list = useLoad(() => api<Key[]>('GET', '/api/keys'), []);
  const [name, setName] = useState('');
  const [created, setCreated] = useState<(Key & { key: string }) | null>(null);
  const create = useAction(async () => {
    setCreated(await api<Key & { key: string }>('POST', '/api/keys', { name }));
    setName('');
    list.reload();
  });
  const revoke = useAction(async (k: Key) => {
    if (!confirm(`Revoke the key "${k.name}"? Sessions made with it end too.`)) return;
    await api('DELETE', `/api/keys/${k.id}`);
    list.reload();
  });
  const errors = fieldErrors(create.error);
  return (
    <section>
      <h1>API keys</h1>
      <form class="row" noValidate onSubmit={submitting(create.call)}>
        <Field id="key-name" label="Name of a new key" error={errors.name}>
          <input
            type="text"
            {...described('key-name', errors.name)}
            maxLength={64}
            value={name}
            onInput={(e) => setName(e.currentTarget.value)}
          />
        </Field>
        <button type="submit" disabled={create.busy}>
          Create key
        </button>
      </form>
      {create.error && !errors.name && <ErrorBox error={create.error} />}
      {created && (
        <div class="new-key" role="status">
          <p>
            The key <strong>{created.name}</strong>. Copy it now: it is shown only once.
          </p>
          <div class="row">
            <input
              type="text"
              readOnly
              aria-label="The new API key"
              value={created.key}
              onFocus={(e) => e.currentTarget.select()}
            />
            <button type="button" class="secondary" onClick={() => void navigator.clipboard?.writeText(created.key)}>
              Copy
            </button>
            <button type="button" class="secondary" onClick={() => setCreated(null)}>
              Done
            </button>
          </div>
        </div>
      )}
      <ErrorBox error={list.error ?? revoke.error} />
      {list.data && (
        <Table caption="Your API keys" columns={['Name', 'Prefix', 'Created', 'Last used', 'Actions']}>
          {list.data.map((k) => (
            <tr>
              <td>{k.name}</td>
              <td>
                <code>{k.prefix}</code>
              </td>
              <td>
                <Ago at={k.created_at} />
              </td>
              <td>
                <Ago at={k.last_used_at} />
              </td>
              <td>
                <button
                  type="button"
                  class="danger small"
                  disabled={revoke.busy}
                  aria-label={`Revoke key ${k.name}`}
                  onClick={() => void revoke.call(k)}
                >
                  Revoke
                </button>
              </td>
            </tr>
          ))}
        </Table>
      )}
    </section>
  );
}
