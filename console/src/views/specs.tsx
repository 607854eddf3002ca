import { api } from '../api.ts';
import { ErrorBox, Table, useLoad } from '../ui.tsx';
import type { Answer } from '../../../shared/client/index.ts';

/** The API's own type (the typed client's, generated from the OpenAPI document). */
type Specs = Answer<'/api/v1/sandbox-specs/search', 'get'>;

export function SpecsPage() {
  const list = useLoad(() => api<Specs>('GET', '/api/v1/sandbox-specs/search?limit=100'), []);
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
