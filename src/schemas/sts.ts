// The STS WebSocket's message catalog (docs/sts-protocol.md): zod schemas of every client message, and
// the types of every server event. The transport parses each JSON text frame with `clientMessage(rules)` and hands
// the typed message to the conversation; the conversation emits `ServerEvent`s through its ConversationClient.
import { z } from 'zod';
import type { UrlRules } from './common.js';
import { agentUpdateBody } from './agents.js';
import { safeJson } from './safe-json.js';
import { parametersObject } from './tools.js';

/** Audio formats a client may stream in or ask back (the agents' formats plus A-law and Opus). */
export const STS_AUDIO_FORMATS = [
  'pcm_48000',
  'pcm_44100',
  'pcm_24000',
  'pcm_16000',
  'pcm_8000',
  'mulaw_8000',
  'alaw_8000',
  'opus_48000',
] as const;
export const stsAudioFormat = z.enum(STS_AUDIO_FORMATS);
export type StsAudioFormat = z.infer<typeof stsAudioFormat>;
/** When the client names no format, both directions use this one. */
export const STS_DEFAULT_AUDIO_FORMAT: StsAudioFormat = 'pcm_44100';

/** An inline WebSocket tool of `config.tools`: run by the connected client, never stored. */
export const inlineWebSocketTool = z.object({
  type: z.literal('custom_websocket'),
  tool_schema: z.object({
    type: z.literal('function'),
    function: z.object({
      name: z.string().regex(/^[a-z][a-z0-9_]*$/, 'must be snake_case'),
      description: z.string().min(1),
      parameters: parametersObject.optional(),
      strict: z.boolean().optional(),
    }),
  }),
  execution_mode: z.enum(['sync', 'async']).optional(),
  tool_call_output_timeout_ms: z.number().int().positive().optional(),
  require_speech_before_tool_call: z.boolean().optional(),
  wait_for_speech_before_tool_call: z.boolean().optional(),
  forbid_speech_after_tool_call: z.boolean().optional(),
  allow_tool_chaining: z.boolean().optional(),
  wait_for_response: z.boolean().optional(),
});
export type InlineWebSocketTool = z.infer<typeof inlineWebSocketTool>;

/** Agent fields that do not concern a live conversation (phone numbers, rollout, integrations, storage). */
const NOT_LIVE = {
  name: true,
  slug: true,
  phone_number: true,
  custom_phone_numbers: true,
  custom_phone_number: true,
  inbound_rollout: true,
  inbound_rollout_forward_phone_number: true,
  outbound_number_pool: true,
  integrations: true,
  procedure_ids: true,
  mcp_server_ids: true,
  observability_integrations: true,
  external_storage_policy: true,
  languages: true,
  tools: true,
  template_variables: true,
} as const;

/**
 * `config`: the first message. Names a stored agent (and project, default `main`), or carries inline settings, or
 * both (inline fields override the agent's). `tools` lists stored tool names or inline WebSocket tools;
 * `template_variables` gives values by name. `binary_audio` is Parley's extension: audio both ways as binary
 * frames in the negotiated formats, no base64.
 */
export function configMessage(rules: UrlRules) {
  return agentUpdateBody(rules)
    .omit(NOT_LIVE)
    .extend({
      type: z.literal('config'),
      agent: z.string().min(1).optional(),
      project: z.string().min(1).optional(),
      model: z.string().min(1).optional(),
      input_format: stsAudioFormat.optional(),
      output_format: stsAudioFormat.optional(),
      binary_audio: z.boolean().optional(),
      tools: z.array(z.union([z.string().min(1), inlineWebSocketTool])).optional(),
      template_variables: z.record(z.string(), z.string()).optional(),
      external_id: z.string().min(1).max(500).optional(),
      /** The scripted engine's script (src/engines/scripted.ts), for tests and demos; other engines ignore it. */
      scripted_engine: z.unknown().optional(),
    });
}
export type ConfigMessage = z.infer<ReturnType<typeof configMessage>>;

/** At most 40 ms of audio per chunk (20 ms recommended), base64 of the input format's bytes. */
export const audioChunkMessage = z.object({
  type: z.literal('audio_chunk'),
  audio: z.string().regex(/^[A-Za-z0-9+/]*={0,2}$/, 'must be base64'),
});
export const MAX_AUDIO_CHUNK_MS = 40;

export const muteMessage = z.object({ type: z.literal('mute') });
export const unmuteMessage = z.object({ type: z.literal('unmute') });
export const toolCallOutputMessage = z.object({
  type: z.literal('tool_call_output'),
  tool_call_id: z.string().min(1),
  output: z.unknown().optional(),
});
export const setExternalIdMessage = z.object({
  type: z.literal('set_external_id'),
  external_id: z.string().min(1).max(500),
});
export const updateSystemPromptMessage = z.object({
  type: z.literal('update_system_prompt'),
  system_prompt: z.string(),
});
export const addSystemMessageMessage = z.object({
  type: z.literal('add_system_message'),
  system_message: z.string().min(1),
});
/** Restricts the tools the assistant may call to a subset of the configured ones (names). */
export const updateToolsSubsetMessage = z.object({
  type: z.literal('update_tools_subset'),
  tools: z.array(z.string().min(1)),
});
export const generateReplyMessage = z.object({
  type: z.literal('generate_reply'),
  system_message: z.string().nullable().optional(),
  user_message: z.string().nullable().optional(),
});
export const sayMessage = z.object({
  type: z.literal('say'),
  text: z.string().min(1),
  interruptible: z.boolean().optional(),
});
/** Drops the conversation's context and starts over with the same configuration (a new turn history). */
export const resetMessage = z.object({ type: z.literal('reset') });

const sessionMessages = z.discriminatedUnion('type', [
  audioChunkMessage,
  muteMessage,
  unmuteMessage,
  toolCallOutputMessage,
  setExternalIdMessage,
  updateSystemPromptMessage,
  addSystemMessageMessage,
  updateToolsSubsetMessage,
  generateReplyMessage,
  sayMessage,
  resetMessage,
]);
/**
 * Every client message after `config`. Each message is checked whole first (safe-json.ts): text the record could
 * not store (NUL, unpaired surrogates, in values or keys, `tool_call_output.output` included) or nesting past the
 * limit is refused at its path.
 */
export const sessionMessage = safeJson(sessionMessages);
export type SessionMessage = z.infer<typeof sessionMessage>;

/** Every client message, checked whole first like sessionMessage. */
export function clientMessage(rules: UrlRules) {
  return safeJson(z.discriminatedUnion('type', [configMessage(rules), ...sessionMessages.options]));
}
export type ClientMessage = ConfigMessage | SessionMessage;
export type ClientMessageType = ClientMessage['type'];

// ---- server events ----

export interface ConversationCreatedEvent {
  type: 'conversation_created';
  conversation_id: string;
}
export interface ReadyToStartConversationEvent {
  type: 'ready_to_start_conversation';
}
export interface InputTextEvent {
  type: 'input_text';
  text: string;
  language?: string;
}
export interface UserStartedSpeakingEvent {
  type: 'user_started_speaking';
}
export interface UserFinishedSpeakingEvent {
  type: 'user_finished_speaking';
}
export interface AssistantStartedSpeakingEvent {
  type: 'assistant_started_speaking';
}
export interface AssistantFinishedSpeakingEvent {
  type: 'assistant_finished_speaking';
}
/** The user's open turn was dropped (too short) or the assistant was interrupted and its reply cancelled. */
export interface InputCancelledEvent {
  type: 'input_cancelled';
}
/** Assistant audio (base64 of the output format) and the text it speaks; under binary_audio the audio goes as a
 * binary frame and this event carries only text (audio ''). */
export interface AudioChunkEvent {
  type: 'audio_chunk';
  audio: string;
  text: string;
  timings?: { start_ms: number; duration_ms: number };
}
export interface DtmfEvent {
  type: 'dtmf';
  digits: string;
}
export interface ToolCallEvent {
  type: 'tool_call';
  tool_call_id: string;
  tool_name: string;
  parameters: Record<string, unknown>;
}
export interface ToolCallOutputProcessedEvent {
  type: 'tool_call_output_processed';
  tool_call_id: string;
}
export interface ToolCallInterruptedEvent {
  type: 'tool_call_interrupted';
  tool_call_id: string;
  tool_name: string;
}
export interface AssistantChoseNotToRespondEvent {
  type: 'assistant_chose_not_to_respond';
}
export interface AssistantEndedConversationEvent {
  type: 'assistant_ended_conversation';
}
export interface ErrorEvent {
  type: 'error';
  error: { message: string; code?: string };
  param_errors?: Record<string, string>;
}
export interface WarningEvent {
  type: 'warning';
  warning: { message: string; code?: string };
}

export type ServerEvent =
  | ConversationCreatedEvent
  | ReadyToStartConversationEvent
  | InputTextEvent
  | UserStartedSpeakingEvent
  | UserFinishedSpeakingEvent
  | AssistantStartedSpeakingEvent
  | AssistantFinishedSpeakingEvent
  | InputCancelledEvent
  | AudioChunkEvent
  | DtmfEvent
  | ToolCallEvent
  | ToolCallOutputProcessedEvent
  | ToolCallInterruptedEvent
  | AssistantChoseNotToRespondEvent
  | AssistantEndedConversationEvent
  | ErrorEvent
  | WarningEvent;
export type ServerEventType = ServerEvent['type'];
