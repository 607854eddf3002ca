/** The command types the conversation runner handles (announced at check-in, before the runner is loaded). */
export const CONVERSATION_COMMANDS = ['start_conversation', 'send_message', 'pause_conversation', 'run_conversation', 'respond_to_confirmation'] as const;
