import { useEffect, useState } from 'preact/hooks';
import { api, query } from '../api.ts';
import { described, ErrorBox, Field, fieldErrors, go, submitting, useAction, useLoad } from '../ui.tsx';
import type { Answer } from '../../../shared/client/index.ts';

/** The API's own types (the typed client's, generated from the OpenAPI document). */
type StartTask = Answer<'/api/v1/app-conversations', 'post'>;
type StartTasks = Answer<'/api/v1/app-conversations/start-tasks', 'get'>;
type Sandboxes = Answer<'/api/v1/sandboxes/search', 'get'>;

/**
 * The start task's steps, in order (OpenHands' AppConversationStartTaskStatus): keyed by the API's own
 * status type, so the compiler refuses a step missing here or one the API does not have.
 */
type Step = Exclude<StartTask['status'], 'ERROR'>;
const STEP_LABELS: Record<Step, string> = {
  WORKING: 'Accepted',
  WAITING_FOR_SANDBOX: 'Waiting for a sandbox',
  PREPARING_REPOSITORY: 'Preparing the repository',
  RUNNING_SETUP_SCRIPT: 'Running .openhands/setup.sh',
  SETTING_UP_GIT_HOOKS: 'Setting up git hooks',
  STARTING_CONVERSATION: 'Starting the agent',
  READY: 'Ready',
};
const START_STEPS = Object.keys(STEP_LABELS) as Step[];

function StartProgress(props: { task: StartTask }) {
  const { task } = props;
  const reached = START_STEPS.indexOf(task.status as Step);
  // The furthest step seen: an error happened in the step after it (polling may miss short steps).
  const [furthest, setFurthest] = useState(-1);
  useEffect(() => setFurthest((f) => Math.max(f, reached)), [reached]);
  return (
    <section class="progress" aria-live="polite" aria-label="Start progress">
      <h2>Starting</h2>
      <ol>
        {START_STEPS.map((step, i) => {
          const state =
            task.status === 'ERROR'
              ? i <= furthest
                ? 'done'
                : i === furthest + 1
                  ? 'failed'
                  : 'todo'
              : i < reached
                ? 'done'
                : i === reached
                  ? step === 'READY'
                    ? 'done'
                    : 'current'
                  : 'todo';
          return (
            <li class={state} aria-current={state === 'current' ? 'step' : undefined}>
              {STEP_LABELS[step]}
              {state === 'current' && '…'}
            </li>
          );
        })}
      </ol>
      {task.status === 'ERROR' && (
        <div class="error-box" role="alert">
          <strong>The start failed.</strong>
          <pre class="detail">{task.detail ?? 'No detail given'}</pre>
        </div>
      )}
    </section>
  );
}

const lines = (text: string) =>
  text
    .split('\n')
    .map((l) => l.trim())
    .filter(Boolean);

export function NewConversationPage() {
  const [f, setF] = useState<Record<string, string>>({ agent_type: 'default', git_provider: '' });
  const [task, setTask] = useState<StartTask | null>(null);
  const sandboxes = useLoad(() => api<Sandboxes>('GET', '/api/v1/sandboxes/search?limit=100'), []);
  const set = (k: string) => (e: { currentTarget: { value: string } }) => setF({ ...f, [k]: e.currentTarget.value });
  const start = useAction(async () => {
    const content: unknown[] = [];
    if (f.message?.trim()) content.push({ type: 'text', text: f.message });
    const images = lines(f.image_urls ?? '');
    if (images.length) content.push({ type: 'image', image_urls: images });
    let mcp: unknown;
    if (f.mcp_config?.trim()) {
      try {
        mcp = JSON.parse(f.mcp_config);
      } catch {
        throw new Error('MCP servers: not valid JSON');
      }
    }
    const opt = (k: string) => (f[k]?.trim() ? f[k]!.trim() : undefined);
    const body = {
      title: opt('title'),
      selected_repository: opt('repository'),
      git_provider: opt('git_provider'),
      selected_branch: opt('branch'),
      initial_message: content.length ? { content, run: true } : undefined,
      conversation_instructions: opt('instructions'),
      agent_type: f.agent_type,
      llm_model: opt('llm_model'),
      sandbox_id: opt('sandbox_id'),
      replay_json: opt('replay_json'),
      suggested_task: opt('task_repo')
        ? {
            repo: opt('task_repo'),
            issue_number: Number(f.task_issue),
            title: f.task_title ?? '',
            task_type: opt('task_type'),
            git_provider: opt('git_provider'),
          }
        : undefined,
      create_microagent: opt('microagent_repo')
        ? { repo: opt('microagent_repo'), title: opt('microagent_title'), git_provider: opt('git_provider') }
        : undefined,
      mcp_config: mcp,
    };
    let current = await api<StartTask>('POST', '/api/v1/app-conversations', body);
    setTask(current);
    while (current.status !== 'READY' && current.status !== 'ERROR') {
      await new Promise((r) => setTimeout(r, 700));
      const [next] = await api<StartTasks>(
        'GET',
        `/api/v1/app-conversations/start-tasks${query({ ids: [current.id] })}`,
      );
      if (!next) throw new Error('The start task is gone');
      current = next;
      setTask(current);
    }
    if (current.status === 'READY' && current.app_conversation_id) go(`conversations/${current.app_conversation_id}`);
  });
  const errors = fieldErrors(start.error);
  const e = (...paths: string[]) => paths.map((p) => errors[p]).find(Boolean);
  const text = (id: string, label: string, err?: string, hint?: string, type: 'text' | 'number' = 'text') => (
    <Field id={`new-${id}`} label={label} error={err} hint={hint}>
      <input type={type as 'text'} {...described(`new-${id}`, err, !!hint)} value={f[id] ?? ''} onInput={set(id)} />
    </Field>
  );
  return (
    <section>
      <h1>New conversation</h1>
      <form class="new-conversation" noValidate onSubmit={submitting(start.call)}>
        <Field id="new-message" label="First message" error={e('initial_message', 'initial_message.content.0.text')}>
          <textarea id="new-message" rows={5} value={f.message ?? ''} onInput={set('message')} />
        </Field>
        <div class="grid">
          {text('title', 'Title', e('title'))}
          {text('repository', 'Repository', e('selected_repository'), 'owner/name')}
          <Field id="new-git_provider" label="Provider" error={e('git_provider')}>
            <select id="new-git_provider" value={f.git_provider} onChange={set('git_provider')}>
              <option value="">(none)</option>
              {['github', 'gitlab', 'bitbucket', 'enterprise_sso'].map((p) => (
                <option value={p}>{p}</option>
              ))}
            </select>
          </Field>
          {text('branch', 'Branch', e('selected_branch'))}
          <Field id="new-agent_type" label="Agent" error={e('agent_type')}>
            <select id="new-agent_type" value={f.agent_type} onChange={set('agent_type')}>
              <option value="default">Coding agent</option>
              <option value="plan">Planning agent (writes PLAN.md only)</option>
            </select>
          </Field>
          <Field id="new-sandbox_id" label="Sandbox" error={e('sandbox_id')}>
            <select id="new-sandbox_id" value={f.sandbox_id ?? ''} onChange={set('sandbox_id')}>
              <option value="">A new sandbox</option>
              {(sandboxes.data?.items ?? []).map((s) => (
                <option value={s.id}>
                  {s.id} ({s.status})
                </option>
              ))}
            </select>
          </Field>
        </div>
        <Field
          id="new-image_urls"
          label="Image URLs (one per line)"
          error={e('initial_message.content.1.image_urls', 'initial_message.content.0.image_urls')}
        >
          <textarea id="new-image_urls" rows={2} value={f.image_urls ?? ''} onInput={set('image_urls')} />
        </Field>
        <Field id="new-instructions" label="Instructions for the agent" error={e('conversation_instructions')}>
          <textarea id="new-instructions" rows={3} value={f.instructions ?? ''} onInput={set('instructions')} />
        </Field>
        <details>
          <summary>Suggested task</summary>
          <div class="grid">
            {text('task_repo', 'Repository', e('suggested_task.repo', 'suggested_task'), 'owner/name')}
            {text('task_issue', 'Issue or PR number', e('suggested_task.issue_number'), undefined, 'number')}
            {text('task_title', 'Title', e('suggested_task.title'))}
            <Field id="new-task_type" label="Task type" error={e('suggested_task.task_type')}>
              <select id="new-task_type" value={f.task_type ?? ''} onChange={set('task_type')}>
                <option value="">(none)</option>
                {['OPEN_ISSUE', 'OPEN_PR', 'MERGE_CONFLICTS', 'FAILING_CHECKS', 'UNRESOLVED_COMMENTS'].map((t) => (
                  <option value={t}>{t}</option>
                ))}
              </select>
            </Field>
          </div>
        </details>
        <details>
          <summary>Create a microagent</summary>
          <div class="grid">
            {text('microagent_repo', 'Repository', e('create_microagent.repo', 'create_microagent'), 'owner/name')}
            {text('microagent_title', 'Title', e('create_microagent.title'))}
          </div>
        </details>
        <details>
          <summary>Advanced</summary>
          {text('llm_model', 'Model for this conversation', e('llm_model'), 'Empty: the model of your settings')}
          <Field
            id="new-mcp_config"
            label="Extra MCP servers (JSON, as in settings)"
            error={Object.entries(errors).find(([k]) => k.startsWith('mcp_config'))?.[1]}
          >
            <textarea
              id="new-mcp_config"
              rows={3}
              value={f.mcp_config ?? ''}
              onInput={set('mcp_config')}
              placeholder='{"shttp_servers": [{"url": "https://..."}]}'
            />
          </Field>
          <Field id="new-replay_json" label="Replay a recorded trajectory (JSON)" error={e('replay_json')}>
            <textarea id="new-replay_json" rows={3} value={f.replay_json ?? ''} onInput={set('replay_json')} />
          </Field>
        </details>
        <ErrorBox error={start.error} />
        <div class="actions">
          <button type="submit" disabled={start.busy}>
            Start conversation
          </button>
        </div>
      </form>
      {task && <StartProgress task={task} />}
      {task?.app_conversation_id && task.status !== 'READY' && (
        <p>
          <a href={`#/conversations/${task.app_conversation_id}`}>Open the conversation</a>
        </p>
      )}
    </section>
  );
}
