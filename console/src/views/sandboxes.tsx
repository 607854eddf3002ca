import { api } from '../api.ts';
import { Ago, Badge, ErrorBox, statusTone, Table, useAction, useLoad } from '../ui.tsx';
import type { Answer } from '../../../shared/client/index.ts';

/** The API's own type (the typed client's, generated from the OpenAPI document). */
type Sandboxes = Answer<'/api/v1/sandboxes/search', 'get'>;

export function SandboxesPage() {
  const list = useLoad(() => api<Sandboxes>('GET', '/api/v1/sandboxes/search?limit=100'), []);
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
