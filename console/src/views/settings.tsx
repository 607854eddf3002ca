import { useEffect, useState } from 'preact/hooks';
import { api, ApiFailure } from '../api.ts';
import {
  bodyOf,
  type Draft,
  draftOf,
  type FieldDef,
  GROUPS,
  isSecretSet,
  PROVIDERS,
  type Settings,
} from '../settings-form.ts';
import { Badge, described, ErrorBox, Field, fieldErrors, submitting, useAction, useLoad } from '../ui.tsx';
import type { Answer } from '../../../shared/client/index.ts';

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
        api<Answer<'/api/options/models', 'get'>>('GET', '/api/options/models'),
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
    const res = await api<Answer<'/api/settings', 'post'>>(
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
      const isSet = isSecretSet(s, f.name);
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
