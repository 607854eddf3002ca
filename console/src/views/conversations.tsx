import { useState } from 'preact/hooks';
import { api, query } from '../api.ts';
import { Ago, Badge, ErrorBox, Field, Pager, statusTone, Table, useLoad } from '../ui.tsx';
import type { Answer } from '../../../shared/client/index.ts';

/** A page of conversations as the API answers it (the typed client's types, generated from the OpenAPI document). */
type Conversations = Answer<'/api/v1/app-conversations/search', 'get'>;

const PAGE_SIZE = 20;

/** A day from a date input as the start of that day, UTC. */
const dayStart = (day: string, plus = 0) => new Date(Date.parse(`${day}T00:00:00Z`) + plus * 86_400_000).toISOString();

export function ConversationsPage() {
  const [title, setTitle] = useState('');
  const [from, setFrom] = useState('');
  const [to, setTo] = useState('');
  const [filters, setFilters] = useState({ title: '', from: '', to: '' });
  // The page ids walked so far, for "previous".
  const [pages, setPages] = useState<(string | null)[]>([null]);
  const pageId = pages[pages.length - 1] ?? null;
  const list = useLoad(
    () =>
      api<Conversations>(
        'GET',
        `/api/v1/app-conversations/search${query({
          title__contains: filters.title,
          created_at__gte: filters.from ? dayStart(filters.from) : undefined,
          created_at__lt: filters.to ? dayStart(filters.to, 1) : undefined,
          limit: PAGE_SIZE,
          page_id: pageId,
        })}`,
      ),
    [filters, pageId],
  );
  return (
    <section>
      <div class="heading">
        <h1>Conversations</h1>
        <a class="button" href="#/conversations/new">
          New conversation
        </a>
      </div>
      <search>
        <form
          class="filters row"
          onSubmit={(e) => {
            e.preventDefault();
            setPages([null]);
            setFilters({ title, from, to });
          }}
        >
          <Field id="search-title" label="Title contains">
            <input id="search-title" type="search" value={title} onInput={(e) => setTitle(e.currentTarget.value)} />
          </Field>
          <Field id="search-from" label="Created from">
            <input id="search-from" type="date" value={from} onInput={(e) => setFrom(e.currentTarget.value)} />
          </Field>
          <Field id="search-to" label="Created until">
            <input id="search-to" type="date" value={to} onInput={(e) => setTo(e.currentTarget.value)} />
          </Field>
          <button type="submit">Search</button>
        </form>
      </search>
      <ErrorBox error={list.error} />
      {list.data && list.data.items.length === 0 && (
        <p class="empty">No conversations{filters.title || filters.from || filters.to ? ' match' : ' yet'}.</p>
      )}
      {list.data && list.data.items.length > 0 && (
        <Table
          caption="Conversations, newest first"
          columns={['Title', 'Repository', 'Agent', 'Sandbox', 'Created', 'Updated']}
        >
          {list.data.items.map((c) => (
            <tr>
              <td>
                <a href={`#/conversations/${c.id}`}>{c.title || c.id}</a>
              </td>
              <td>{c.selected_repository ?? '-'}</td>
              <td>
                <Badge tone={statusTone(c.execution_status)}>{c.execution_status ?? '-'}</Badge>
              </td>
              <td>
                <Badge tone={statusTone(c.sandbox_status)}>{c.sandbox_status ?? '-'}</Badge>
              </td>
              <td>
                <Ago at={c.created_at} />
              </td>
              <td>
                <Ago at={c.updated_at} />
              </td>
            </tr>
          ))}
        </Table>
      )}
      <Pager pages={pages} setPages={setPages} next={list.data?.next_page_id} labels={['Previous page', 'Next page']} />
    </section>
  );
}
