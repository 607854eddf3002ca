import { useState } from 'preact/hooks';
import { api, query } from '../api.ts';
import { actionName, actorName, entryDetail, manages } from '../organization.ts';
import { ErrorBox, Pager, Table, useLoad, type Me } from '../ui.tsx';
import type { Answer } from '../../../shared/client/index.ts';

/** The API's own types (the typed client's, generated from the OpenAPI document). */
type AuditPage = Answer<'/api/v1/audit-log', 'get'>;
type Org = Answer<'/api/v1/orgs/{org_id}', 'get'>;

const PAGE_SIZE = 50;

/**
 * `#/audit`: the organization's audit log for owners and admins, newest first, a page at a time
 * (`next_page_id`). Who did it reads as the member's email where the organization lists them (a
 * former member, an operator or `system` as their id). Members do not get the page (nor its link).
 */
export function AuditLogPage(props: { me: Me }) {
  const allowed = manages(props.me.role);
  const [pages, setPages] = useState<(string | null)[]>([null]);
  const pageId = pages[pages.length - 1] ?? null;
  const log = useLoad(
    () =>
      allowed
        ? api<AuditPage>('GET', `/api/v1/audit-log${query({ limit: PAGE_SIZE, page_id: pageId })}`)
        : Promise.resolve(undefined),
    [allowed, pageId],
  );
  const orgId = props.me.org_id;
  const org = useLoad(
    () =>
      allowed && orgId ? api<Org>('GET', `/api/v1/orgs/${encodeURIComponent(orgId)}`) : Promise.resolve(undefined),
    [allowed, orgId],
  );
  if (!allowed) return <p class="empty">Only the organization's owners and admins see its audit log.</p>;
  const members = org.data?.members ?? [];
  return (
    <section>
      <h1>Audit log</h1>
      <p class="notice">
        Who did what in your organization, newest first. Settings and secrets appear by name, never their values.
      </p>
      <ErrorBox error={log.error} />
      {log.data && log.data.items.length === 0 && <p class="empty">Nothing recorded yet.</p>}
      {log.data && log.data.items.length > 0 && (
        <Table caption="Audit log, newest first" columns={['When', 'Who', 'Action', 'Details']}>
          {log.data.items.map((e) => (
            <tr data-testid="audit-row">
              <td>
                <time dateTime={e.at}>{new Date(e.at).toLocaleString()}</time>
              </td>
              <td>{actorName(e.actor, members)}</td>
              <td>{actionName(e.action)}</td>
              <td>{entryDetail(e, members)}</td>
            </tr>
          ))}
        </Table>
      )}
      <Pager pages={pages} setPages={setPages} next={log.data?.next_page_id} labels={['Newer', 'Older']} />
    </section>
  );
}
