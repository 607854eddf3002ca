import { useState } from 'preact/hooks';
import { api } from '../api.ts';
import { Ago, described, ErrorBox, Field, fieldErrors, submitting, Table, useAction, useLoad } from '../ui.tsx';
import type { Answer } from '../../../shared/client/index.ts';

/** The API's own types (the typed client's, generated from the OpenAPI document). */
type Key = Answer<'/api/keys', 'get'>[number];
/** A new key: shown once, with its secret. */
type NewKey = Answer<'/api/keys', 'post'>;

export function KeysPage() {
  const list = useLoad(() => api<Key[]>('GET', '/api/keys'), []);
  const [name, setName] = useState('');
  const [created, setCreated] = useState<NewKey | null>(null);
  const create = useAction(async () => {
    setCreated(await api<NewKey>('POST', '/api/keys', { name }));
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
