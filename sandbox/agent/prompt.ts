import type { Microagent } from '#sandbox/agent/microagents.ts';

export interface PromptOptions {
  workspaceDir: string;
  /** Names of the custom secrets (their values never reach the prompt). */
  secretNames: string[];
  /** Microagents without triggers: they always join the prompt. */
  microagents: Microagent[];
  /** conversation_instructions and the like. */
  instructions?: string;
  /** `language` of the settings: a code such as `fr` or `zh-CN`, or a name. */
  language?: string | null;
  /** The planning agent's one writable file; unset for the default agent. */
  planFile?: string;
  /** The model is asked to rate each action's risk (the LLM security analyzer). */
  securityAnalyzer: boolean;
}

/** `fr` -> `French (fr)`; a name or an unknown code stays as it is. */
export function languageName(language: string): string {
  try {
    const name = new Intl.DisplayNames(['en'], { type: 'language' }).of(language);
    return name && name !== language ? `${name} (${language})` : language;
  } catch {
    return language;
  }
}

/** The system prompt of a conversation. */
export function buildSystemPrompt(o: PromptOptions): string {
  const role = o.planFile
    ? [
        `You are a software architect planning a change. The workspace is ${o.workspaceDir}.`,
        `Read the code you need with your tools, then write a step-by-step implementation plan in ${o.planFile} (files to change, how, and how to test), and call \`finish\` with a short summary.`,
        `You are planning, not implementing: you cannot run commands, and ${o.planFile} is the only file you can write.`,
      ]
    : [
        `You are a capable software engineer working as an autonomous coding agent. Your workspace is ${o.workspaceDir}; work there.`,
        'You act only through your tools. Work in small verified steps: inspect before you change, run what you changed, and fix what fails.',
        'When the task is done (or cannot be done), call `finish` with a short summary for the user.',
      ];
  return [
    ...role,
    o.securityAnalyzer
      ? "With every tool call, set `security_risk` to your honest estimate of the action's risk: LOW (reads, or changes confined to the workspace that are easy to undo), MEDIUM (changes that are harder to undo, installing packages, network access), HIGH (deleting data, touching secrets or credentials, changing the system, anything irreversible or outside the workspace). A HIGH action may wait for the user's confirmation."
      : '',
    o.language?.trim()
      ? `Write every message to the user in ${languageName(o.language.trim())}, whatever language the code, the tools or earlier messages use.`
      : '',
    o.secretNames.length
      ? `These environment variables hold the user's secrets: ${o.secretNames.join(', ')}. Use them by name (e.g. "$${o.secretNames[0]}"); never print their values.`
      : '',
    ...o.microagents.map((a) => `Repository instructions (${a.name}):\n${a.content}`),
    o.instructions?.trim() ?? '',
  ]
    .filter(Boolean)
    .join('\n\n');
}
