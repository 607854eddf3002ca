import type { ComponentChildren } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { ApiFailure } from './api.ts';
import type { Answer } from '../../shared/client/index.ts';

/** Form fields: a label tied to its input, a hint, and the server's message for this field (422). */
export function Field(props: {
  id: string;
  label: string;
  error?: string | undefined;
  hint?: string;
  badge?: ComponentChildren;
  children: ComponentChildren;
}) {
  return (
    <div class={`field${props.error ? ' invalid' : ''}`}>
      <label for={props.id}>
        {props.label} {props.badge}
      </label>
      {props.children}
      {props.hint && <small id={`${props.id}-hint`}>{props.hint}</small>}
      {props.error && (
        <p class="field-error" id={`${props.id}-error`} role="alert">
          {props.error}
        </p>
      )}
    </div>
  );
}

/** ARIA for an input of a `Field`: its hint and error describe it. */
export const described = (id: string, error?: string, hint?: boolean) => ({
  id,
  'aria-invalid': error ? ('true' as const) : undefined,
  'aria-describedby': [hint ? `${id}-hint` : '', error ? `${id}-error` : ''].filter(Boolean).join(' ') || undefined,
});

export const Badge = (props: { tone?: string; children: ComponentChildren; label?: string }) => (
  <span class={`badge ${props.tone ?? ''}`} title={props.label}>
    {props.children}
  </span>
);

export function ErrorBox(props: { error: unknown }) {
  if (!props.error) return null;
  const message = props.error instanceof Error ? props.error.message : String(props.error);
  return (
    <div class="error-box" role="alert">
      {message}
    </div>
  );
}

/** Runs an async action with a busy flag and its error kept for display. */
export function useAction<A extends unknown[]>(run: (...args: A) => Promise<void>) {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(null);
  const call = async (...args: A) => {
    setBusy(true);
    setError(null);
    try {
      await run(...args);
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };
  return { busy, error, call, setError };
}

/** Loads data once per change of `deps`, and again on `reload()`. */
export function useLoad<T>(load: () => Promise<T>, deps: unknown[]) {
  const [data, setData] = useState<T | undefined>(undefined);
  const [error, setError] = useState<unknown>(null);
  const [tick, setTick] = useState(0);
  useEffect(() => {
    let live = true;
    setError(null);
    load().then(
      (d) => live && setData(d),
      (e) => live && setError(e),
    );
    return () => {
      live = false;
    };
  }, [...deps, tick]);
  return { data, error, reload: () => setTick((t) => t + 1), setData };
}

export const fieldErrors = (error: unknown): Record<string, string> =>
  error instanceof ApiFailure ? error.fields : {};

/** A time as "3 min ago" with the exact time on hover. */
export function Ago(props: { at: string | null | undefined }) {
  if (!props.at) return <span>-</span>;
  const ms = Date.now() - new Date(props.at).getTime();
  const s = Math.round(ms / 1000);
  const text =
    s < 60
      ? `${Math.max(s, 0)} s ago`
      : s < 3600
        ? `${Math.round(s / 60)} min ago`
        : s < 86400
          ? `${Math.round(s / 3600)} h ago`
          : `${Math.round(s / 86400)} d ago`;
  return (
    <time dateTime={props.at} title={new Date(props.at).toLocaleString()}>
      {text}
    </time>
  );
}

export const statusTone = (status: string | null | undefined): string => {
  switch ((status ?? '').toUpperCase()) {
    case 'RUNNING':
    case 'READY':
    case 'FINISHED':
      return 'ok';
    case 'ERROR':
    case 'MISSING':
    case 'STUCK':
      return 'bad';
    case 'PAUSED':
    case 'WAITING_FOR_CONFIRMATION':
      return 'warn';
    default:
      return '';
  }
};

/** The signed-in user (GET /api/v1/users/me), typed by the client generated from the OpenAPI document. */
export type Me = Answer<'/api/v1/users/me', 'get'>;

/** Navigates inside the console (the part of the URL after `#`). */
export const go = (path: string) => (location.hash = `#/${path}`);

/** A list as a table: a caption for screen readers, column headers, the rows. */
export function Table(props: { caption: string; columns: string[]; children: ComponentChildren }) {
  return (
    <table class="list">
      <caption class="visually-hidden">{props.caption}</caption>
      <thead>
        <tr>
          {props.columns.map((c) => (
            <th scope="col">{c}</th>
          ))}
        </tr>
      </thead>
      <tbody>{props.children}</tbody>
    </table>
  );
}

/**
 * Back and forward through a list read by `next_page_id`: `pages` holds the id of each page read so far
 * (null for the first), so going back needs no cursor of its own.
 */
export function Pager(props: {
  pages: (string | null)[];
  setPages: (pages: (string | null)[]) => void;
  next: string | null | undefined;
  labels: [back: string, forward: string];
}) {
  const { pages, setPages, next } = props;
  return (
    <nav class="pager" aria-label="Pages">
      <button type="button" class="secondary" disabled={pages.length < 2} onClick={() => setPages(pages.slice(0, -1))}>
        {props.labels[0]}
      </button>
      <span>Page {pages.length}</span>
      <button type="button" class="secondary" disabled={!next} onClick={() => next && setPages([...pages, next])}>
        {props.labels[1]}
      </button>
    </nav>
  );
}

/** A form's submit handler: no page load, then `run`. */
export const submitting = (run: () => unknown) => (e: Event) => {
  e.preventDefault();
  void run();
};
