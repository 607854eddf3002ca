import { useEffect, useState } from 'preact/hooks';
import { api, ApiFailure } from '../api.ts';
import { Badge, described, ErrorBox, Field, fieldErrors, submitting, useAction, useLoad } from '../ui.tsx';

type Kind = 'text' | 'int' | 'number' | 'bool' | 'secret' | 'agent' | 'analyzer' | 'model';
interface FieldDef {
  name: string;
  label: string;
  kind: Kind;
  hint?: string;
}

/** Every settings field of the seed, grouped as a person looks for them. */
const GROUPS: { title: string; fields: FieldDef[] }[] = [
  {
    title: 'LLM',
    fields: [
      {
        name: 'llm_model',
        label: 'Model',
        kind: 'model',
        hint: 'e.g. openai/gpt-4o, or the model name your base URL serves',
      },
      { name: 'llm_api_key', label: 'API key', kind: 'secret' },
      {
        name: 'llm_base_url',
        label: 'Base URL',
        kind: 'text',
        hint: 'Any OpenAI-compatible endpoint; empty for the provider of the model',
      },
      { name: 'max_budget_per_task', label: 'Budget per task (USD)', kind: 'number' },
      { name: 'enable_default_condenser', label: 'Summarize long conversations (condenser)', kind: 'bool' },
      {
        name: 'condenser_max_size',
        label: 'Condenser size (messages)',
        kind: 'int',
        hint: '20 or more; empty for 120',
      },
    ],
  },
  {
    title: 'Agent',
    fields: [
      { name: 'agent', label: 'Agent', kind: 'agent' },
      { name: 'max_iterations', label: 'Maximum iterations', kind: 'int' },
      { name: 'language', label: 'Language', kind: 'text', hint: 'e.g. en' },
      { name: 'confirmation_mode', label: 'Ask before running actions (confirmation mode)', kind: 'bool' },
      {
        name: 'security_analyzer',
        label: 'Security analyzer',
        kind: 'analyzer',
        hint: 'With "llm", only risky actions wait for confirmation',
      },
      { name: 'search_api_key', label: 'Search API key', kind: 'secret' },
      { name: 'enable_sound_notifications', label: 'Sound when the agent finishes or waits', kind: 'bool' },
      { name: 'enable_proactive_conversation_starters', label: 'Proactive conversation starters', kind: 'bool' },
      { name: 'enable_solvability_analysis', label: 'Solvability analysis', kind: 'bool' },
      { name: 'user_consents_to_analytics', label: 'Consent to analytics', kind: 'bool' },
    ],
  },
  {
    title: 'Sandbox',
    fields: [
      { name: 'sandbox_base_container_image', label: 'Base container image', kind: 'text' },
      { name: 'sandbox_runtime_container_image', label: 'Runtime container image', kind: 'text' },
      { name: 'remote_runtime_resource_factor', label: 'Resource factor', kind: 'int', hint: '1, 2, 4 or 8' },
      { name: 'sandbox_api_key', label: 'Sandbox API key', kind: 'secret' },
    ],
  },
  {
    title: 'Git identity and account',
    fields: [
      { name: 'git_user_name', label: 'Git user name', kind: 'text' },
      { name: 'git_user_email', label: 'Git user email', kind: 'text' },
      { name: 'email', label: 'Email', kind: 'text' },
      { name: 'email_verified', label: 'Email verified', kind: 'bool' },
    ],
  },
];

/** Text fields where null keeps the stored value: clearing them sends "". */
const CLEAR_WITH_EMPTY = new Set(['llm_model', 'llm_base_url']);
const PROVIDERS = ['github', 'gitlab', 'bitbucket', 'enterprise_sso'] as const;

type Settings = Record<string, any>;
interface Remote {
  url: string;
  api_key: string;
}
interface Stdio {
  name: string;
  command: string;
  args: string;
  env: { key: string; value: string; stored: boolean }[];
}
interface SecretRow {
  name: string;
  value: string;
  description: string;
  stored: boolean;
  remove: boolean;
}
interface TokenRow {
  token: string;
  host: string;
  remove: boolean;
}

interface Draft {
  values: Record<string, string | boolean>;
  secrets: Record<string, { value: string; clear: boolean }>;
  sse: Remote[];
  shttp: Remote[];
  stdio: Stdio[];
  custom: SecretRow[];
  tokens: Record<string, TokenRow>;
}

function draftOf(s: Settings | null): Draft {
  const values: Draft['values'] = {};
  const secrets: Draft['secrets'] = {};
  for (const g of GROUPS)
    for (const f of g.fields) {
      if (f.kind === 'secret') secrets[f.name] = { value: '', clear: false };
      else if (f.kind === 'bool') values[f.name] = s?.[f.name] === true;
      else values[f.name] = s?.[f.name] === null || s?.[f.name] === undefined ? '' : String(s[f.name]);
    }
  if (!s)
    Object.assign(values, {
      enable_default_condenser: true,
      enable_proactive_conversation_starters: true,
      enable_solvability_analysis: true,
    });
  const mcp = s?.mcp_config ?? {};
  const remote = (list: any[] | undefined): Remote[] =>
    (list ?? []).map((r) => ({ url: String(r.url ?? ''), api_key: '' }));
  return {
    values,
    secrets,
    sse: remote(mcp.sse_servers),
    shttp: remote(mcp.shttp_servers),
    stdio: (mcp.stdio_servers ?? []).map((r: any) => ({
      name: String(r.name ?? ''),
      command: String(r.command ?? ''),
      args: (r.args ?? []).join('\n'),
      env: Object.keys(r.env ?? {}).map((key) => ({ key, value: '', stored: true })),
    })),
    custom: Object.entries(s?.secrets_store?.custom_secrets ?? {}).map(([name, v]: [string, any]) => ({
      name,
      value: '',
      description: v?.description ?? '',
      stored: true,
      remove: false,
    })),
    tokens: Object.fromEntries(
      PROVIDERS.map((p) => [p, { token: '', host: s?.provider_tokens_set?.[p] ?? '', remove: false }]),
    ),
  };
}

/** The body of POST /api/settings from the form: secrets only when typed (null keeps them), MCP servers as listed. */
function bodyOf(d: Draft, s: Settings | null): Record<string, unknown> {
  const body: Record<string, unknown> = {};
  for (const g of GROUPS)
    for (const f of g.fields) {
      const v = d.values[f.name];
      if (f.kind === 'secret') {
        const secret = d.secrets[f.name]!;
        if (secret.clear) body[f.name] = '';
        else if (secret.value) body[f.name] = secret.value;
      } else if (f.kind === 'bool') body[f.name] = v === true;
      else if (f.kind === 'int' || f.kind === 'number') body[f.name] = v === '' ? null : Number(v);
      else if (f.kind === 'analyzer') body[f.name] = v === '' ? null : v;
      else body[f.name] = v === '' ? (CLEAR_WITH_EMPTY.has(f.name) ? '' : null) : v;
    }
  const remote = (list: Remote[]) => list.map((r) => ({ url: r.url.trim(), api_key: r.api_key || null }));
  body.mcp_config = {
    sse_servers: remote(d.sse),
    shttp_servers: remote(d.shttp),
    stdio_servers: d.stdio.map((r) => ({
      name: r.name.trim(),
      command: r.command,
      args: r.args.split('\n').filter((a) => a !== ''),
      env: Object.fromEntries(r.env.filter((e) => e.key).map((e) => [e.key, e.value || null])),
    })),
  };
  const custom: Record<string, unknown> = {};
  for (const row of d.custom) {
    if (!row.name) continue;
    custom[row.name] = row.remove ? null : { secret: row.value || null, description: row.description || null };
  }
  const tokens: Record<string, unknown> = {};
  for (const p of PROVIDERS) {
    const t = d.tokens[p]!;
    const stored = Object.hasOwn(s?.provider_tokens_set ?? {}, p);
    if (t.remove) tokens[p] = null;
    else if (t.token || (stored && (t.host || null) !== (s?.provider_tokens_set?.[p] ?? null)))
      tokens[p] = { token: t.token || null, host: t.host || null };
  }
  body.secrets_store = { custom_secrets: custom, provider_tokens: tokens };
  return body;
}

const SetBadge = (props: { set: boolean }) =>
  props.set ? (
    <Badge tone="ok" label="A value is stored; it is never shown">
      set
    </Badge>
  ) : (
    <Badge label="No value stored">not set</Badge>
  );

export function SettingsPage(props: { onSaved: () => void }) {
  const settings = useLoad(
    () =>
      api<Settings>('GET', '/api/settings').catch((e) =>
        e instanceof ApiFailure && e.status === 404 ? null : Promise.reject(e),
      ),
    [],
  );
  const options = useLoad(
    () =>
      Promise.all([
        api<string[]>('GET', '/api/options/agents'),
        api<string[]>('GET', '/api/options/security-analyzers'),
        api<string[]>('GET', '/api/options/models'),
      ]),
    [],
  );
  const [draft, setDraft] = useState<Draft | null>(null);
  const [saved, setSaved] = useState<string | null>(null);
  useEffect(() => {
    if (settings.data !== undefined) setDraft(draftOf(settings.data));
  }, [settings.data]);
  const save = useAction(async () => {
    setSaved(null);
    const res = await api<{ message: string; ignored_fields: string[] }>(
      'POST',
      '/api/settings',
      bodyOf(draft!, settings.data ?? null),
    );
    // What was stored, in the same render as "Saved": secrets typed are gone from the inputs, "set" badges show.
    const stored = await api<Settings>('GET', '/api/settings');
    settings.setData(stored);
    setDraft(draftOf(stored));
    setSaved(res.ignored_fields?.length ? `Saved (ignored: ${res.ignored_fields.join(', ')})` : 'Saved');
    props.onSaved();
  });
  if (settings.error) return <ErrorBox error={settings.error} />;
  if (!draft) return <p class="loading">Loading settings…</p>;
  const errors = fieldErrors(save.error);
  const update = (fn: (d: Draft) => void) => {
    const next = structuredClone(draft);
    fn(next);
    setDraft(next);
  };
  const [agents = [], analyzers = [], models = []] = options.data ?? [];
  const s = settings.data ?? null;
  const known = new Set<string>();
  const err = (path: string) => {
    known.add(path);
    return errors[path];
  };

  const input = (f: FieldDef) => {
    const id = `setting-${f.name}`;
    const e = err(f.name);
    const value = draft.values[f.name];
    if (f.kind === 'bool')
      return (
        <div class={`field check${e ? ' invalid' : ''}`}>
          <input
            type="checkbox"
            {...described(id, e)}
            checked={value === true}
            onChange={(ev) => update((d) => (d.values[f.name] = ev.currentTarget.checked))}
          />
          <label for={id}>{f.label}</label>
          {e && (
            <p class="field-error" id={`${id}-error`} role="alert">
              {e}
            </p>
          )}
        </div>
      );
    if (f.kind === 'secret') {
      const isSet = s?.[`${f.name}_set`] === true;
      const secret = draft.secrets[f.name]!;
      return (
        <Field
          id={id}
          label={f.label}
          error={e}
          badge={<SetBadge set={isSet} />}
          hint={isSet ? 'Leave empty to keep the stored value' : undefined}
        >
          <div class="row">
            <input
              type="password"
              autocomplete="new-password"
              {...described(id, e, isSet)}
              value={secret.value}
              disabled={secret.clear}
              onInput={(ev) => update((d) => (d.secrets[f.name]!.value = ev.currentTarget.value))}
            />
            {isSet && (
              <label class="inline">
                <input
                  type="checkbox"
                  checked={secret.clear}
                  onChange={(ev) => update((d) => (d.secrets[f.name]!.clear = ev.currentTarget.checked))}
                />{' '}
                remove
              </label>
            )}
          </div>
        </Field>
      );
    }
    if (f.kind === 'agent' || f.kind === 'analyzer') {
      const choices = f.kind === 'agent' ? agents : analyzers;
      return (
        <Field id={id} label={f.label} error={e} hint={f.hint}>
          <select
            {...described(id, e, !!f.hint)}
            value={String(value)}
            onChange={(ev) => update((d) => (d.values[f.name] = ev.currentTarget.value))}
          >
            <option value="">{f.kind === 'agent' ? '(default)' : 'none'}</option>
            {choices.map((c) => (
              <option value={c}>{c}</option>
            ))}
            {value && !choices.includes(String(value)) && <option value={String(value)}>{String(value)}</option>}
          </select>
        </Field>
      );
    }
    return (
      <Field id={id} label={f.label} error={e} hint={f.hint}>
        <input
          type={f.kind === 'int' || f.kind === 'number' ? 'number' : 'text'}
          step={f.kind === 'number' ? 'any' : undefined}
          list={f.kind === 'model' ? 'model-choices' : undefined}
          {...described(id, e, !!f.hint)}
          value={String(value)}
          onInput={(ev) => update((d) => (d.values[f.name] = ev.currentTarget.value))}
        />
      </Field>
    );
  };

  const remoteList = (key: 'sse' | 'shttp', title: string) => (
    <fieldset>
      <legend>{title}</legend>
      {draft[key].map((r, i) => {
        const base = `mcp_config.${key}_servers.${i}`;
        return (
          <div class="row item">
            <Field id={`${key}-${i}-url`} label="URL" error={err(`${base}.url`)}>
              <input
                type="text"
                {...described(`${key}-${i}-url`, errors[`${base}.url`])}
                value={r.url}
                onInput={(ev) => update((d) => (d[key][i]!.url = ev.currentTarget.value))}
              />
            </Field>
            <Field
              id={`${key}-${i}-key`}
              label="API key (write-only)"
              error={err(`${base}.api_key`)}
              hint="Empty keeps the stored key"
            >
              <input
                type="password"
                autocomplete="new-password"
                {...described(`${key}-${i}-key`, undefined, true)}
                value={r.api_key}
                onInput={(ev) => update((d) => (d[key][i]!.api_key = ev.currentTarget.value))}
              />
            </Field>
            <button
              type="button"
              class="secondary"
              aria-label={`Remove ${title} server ${i + 1}`}
              onClick={() => update((d) => d[key].splice(i, 1))}
            >
              Remove
            </button>
          </div>
        );
      })}
      <button type="button" class="secondary" onClick={() => update((d) => d[key].push({ url: '', api_key: '' }))}>
        Add {title} server
      </button>
    </fieldset>
  );

  // Built before the summary below, so it knows which field errors were shown next to their field.
  const sections = (
    <>
      {GROUPS.map((g) => (
        <section class="group" aria-labelledby={`group-${g.title}`}>
          <h2 id={`group-${g.title}`}>{g.title}</h2>
          <div class="grid">{g.fields.map(input)}</div>
        </section>
      ))}
      <section class="group" aria-labelledby="group-mcp">
        <h2 id="group-mcp">MCP servers</h2>
        {remoteList('sse', 'SSE')}
        {remoteList('shttp', 'Streamable HTTP')}
        <fieldset>
          <legend>stdio (run inside the sandbox)</legend>
          {draft.stdio.map((r, i) => {
            const base = `mcp_config.stdio_servers.${i}`;
            return (
              <div class="item">
                <div class="row">
                  <Field id={`stdio-${i}-name`} label="Name" error={err(`${base}.name`)}>
                    <input
                      type="text"
                      {...described(`stdio-${i}-name`, errors[`${base}.name`])}
                      value={r.name}
                      onInput={(ev) => update((d) => (d.stdio[i]!.name = ev.currentTarget.value))}
                    />
                  </Field>
                  <Field id={`stdio-${i}-command`} label="Command" error={err(`${base}.command`)}>
                    <input
                      type="text"
                      {...described(`stdio-${i}-command`, errors[`${base}.command`])}
                      value={r.command}
                      onInput={(ev) => update((d) => (d.stdio[i]!.command = ev.currentTarget.value))}
                    />
                  </Field>
                  <Field id={`stdio-${i}-args`} label="Arguments (one per line)" error={err(`${base}.args`)}>
                    <textarea
                      id={`stdio-${i}-args`}
                      rows={2}
                      value={r.args}
                      onInput={(ev) => update((d) => (d.stdio[i]!.args = ev.currentTarget.value))}
                    />
                  </Field>
                  <button
                    type="button"
                    class="secondary"
                    aria-label={`Remove stdio server ${r.name || i + 1}`}
                    onClick={() => update((d) => d.stdio.splice(i, 1))}
                  >
                    Remove
                  </button>
                </div>
                {r.env.map((v, j) => (
                  <div class="row env">
                    <Field id={`stdio-${i}-env-${j}-key`} label="Variable" error={err(`${base}.env.${v.key}`)}>
                      <input
                        type="text"
                        id={`stdio-${i}-env-${j}-key`}
                        value={v.key}
                        disabled={v.stored}
                        onInput={(ev) => update((d) => (d.stdio[i]!.env[j]!.key = ev.currentTarget.value))}
                      />
                    </Field>
                    <Field
                      id={`stdio-${i}-env-${j}-value`}
                      label="Value (write-only)"
                      badge={v.stored ? <SetBadge set /> : undefined}
                    >
                      <input
                        type="password"
                        autocomplete="new-password"
                        id={`stdio-${i}-env-${j}-value`}
                        value={v.value}
                        onInput={(ev) => update((d) => (d.stdio[i]!.env[j]!.value = ev.currentTarget.value))}
                      />
                    </Field>
                    <button
                      type="button"
                      class="secondary"
                      aria-label={`Remove variable ${v.key}`}
                      onClick={() => update((d) => d.stdio[i]!.env.splice(j, 1))}
                    >
                      Remove
                    </button>
                  </div>
                ))}
                <button
                  type="button"
                  class="secondary"
                  onClick={() => update((d) => d.stdio[i]!.env.push({ key: '', value: '', stored: false }))}
                >
                  Add variable
                </button>
              </div>
            );
          })}
          <button
            type="button"
            class="secondary"
            onClick={() => update((d) => d.stdio.push({ name: '', command: '', args: '', env: [] }))}
          >
            Add stdio server
          </button>
        </fieldset>
      </section>
      <section class="group" aria-labelledby="group-secrets">
        <h2 id="group-secrets">Secrets</h2>
        <p class="hint">
          Write-only: a stored value is never shown. Custom secrets reach the agent's commands as environment variables,
          masked in every event.
        </p>
        <fieldset>
          <legend>Custom secrets</legend>
          {draft.custom.map((row, i) => (
            <div class="row item">
              <Field
                id={`secret-${i}-name`}
                label="Name"
                error={err(`secrets_store.custom_secrets.${row.name}`)}
                badge={row.stored ? <SetBadge set /> : undefined}
              >
                <input
                  type="text"
                  id={`secret-${i}-name`}
                  value={row.name}
                  disabled={row.stored}
                  onInput={(ev) => update((d) => (d.custom[i]!.name = ev.currentTarget.value))}
                />
              </Field>
              <Field id={`secret-${i}-value`} label={row.stored ? 'New value' : 'Value'}>
                <input
                  type="password"
                  autocomplete="new-password"
                  id={`secret-${i}-value`}
                  value={row.value}
                  disabled={row.remove}
                  onInput={(ev) => update((d) => (d.custom[i]!.value = ev.currentTarget.value))}
                />
              </Field>
              <Field id={`secret-${i}-description`} label="Description">
                <input
                  type="text"
                  id={`secret-${i}-description`}
                  value={row.description}
                  onInput={(ev) => update((d) => (d.custom[i]!.description = ev.currentTarget.value))}
                />
              </Field>
              {row.stored ? (
                <label class="inline">
                  <input
                    type="checkbox"
                    checked={row.remove}
                    onChange={(ev) => update((d) => (d.custom[i]!.remove = ev.currentTarget.checked))}
                  />{' '}
                  remove
                </label>
              ) : (
                <button
                  type="button"
                  class="secondary"
                  aria-label={`Remove secret ${i + 1}`}
                  onClick={() => update((d) => d.custom.splice(i, 1))}
                >
                  Remove
                </button>
              )}
            </div>
          ))}
          <button
            type="button"
            class="secondary"
            onClick={() =>
              update((d) => d.custom.push({ name: '', value: '', description: '', stored: false, remove: false }))
            }
          >
            Add secret
          </button>
        </fieldset>
        <fieldset>
          <legend>Git provider tokens</legend>
          {PROVIDERS.map((p) => {
            const stored = Object.hasOwn(s?.provider_tokens_set ?? {}, p);
            const t = draft.tokens[p]!;
            return (
              <div class="row item">
                <Field
                  id={`token-${p}`}
                  label={`${p} token`}
                  badge={<SetBadge set={stored} />}
                  error={err(`secrets_store.provider_tokens.${p}.token`)}
                >
                  <input
                    type="password"
                    autocomplete="new-password"
                    id={`token-${p}`}
                    value={t.token}
                    disabled={t.remove}
                    onInput={(ev) => update((d) => (d.tokens[p]!.token = ev.currentTarget.value))}
                  />
                </Field>
                <Field
                  id={`token-${p}-host`}
                  label="Host (self-hosted)"
                  error={err(`secrets_store.provider_tokens.${p}.host`)}
                >
                  <input
                    type="text"
                    id={`token-${p}-host`}
                    value={t.host}
                    onInput={(ev) => update((d) => (d.tokens[p]!.host = ev.currentTarget.value))}
                  />
                </Field>
                {stored && (
                  <label class="inline">
                    <input
                      type="checkbox"
                      checked={t.remove}
                      onChange={(ev) => update((d) => (d.tokens[p]!.remove = ev.currentTarget.checked))}
                    />{' '}
                    remove
                  </label>
                )}
              </div>
            );
          })}
        </fieldset>
      </section>
    </>
  );
  const general = Object.entries(errors).filter(([k]) => !known.has(k));
  return (
    <form class="settings" noValidate onSubmit={submitting(save.call)}>
      <h1>Settings</h1>
      <datalist id="model-choices">
        {models.map((m) => (
          <option value={m} />
        ))}
      </datalist>
      {sections}
      {general.length > 0 && (
        <div class="error-box" role="alert">
          {general.map(([k, v]) => (
            <p>{k ? `${k}: ${v}` : v}</p>
          ))}
        </div>
      )}
      {save.error && !(save.error instanceof ApiFailure && save.error.status === 422) && (
        <ErrorBox error={save.error} />
      )}
      {save.error instanceof ApiFailure && save.error.status === 422 && (
        <p class="error-box" role="alert">
          Not saved: see the fields marked below their inputs.
        </p>
      )}
      <div class="actions sticky">
        <button type="submit" disabled={save.busy}>
          Save settings
        </button>
        {saved && (
          <span class="saved" role="status">
            {saved}
          </span>
        )}
      </div>
    </form>
  );
}
