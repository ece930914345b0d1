// What the model is offered for one POST /v1/responses request: inline tool definitions as functions, built-ins
// and stored transfer tools as functions whose call becomes an `action`, and `web_search` when configured.
import type { ChatFunctionTool } from '../engines/chat-client.js';
import type { InlineToolDefinition, SpeechBeforeToolCall } from '../schemas/responses.js';

/** A stored tool of type built_in_transfer_to_phone_number (the Tool record), as this endpoint needs it. */
export interface StoredPhoneTransfer {
  type: 'built_in_transfer_to_phone_number';
  name: string;
  description: string;
  phone_number: string | null;
  dtmf: string | null;
  dynamic_dtmf: boolean;
  detect_voicemail: boolean;
  use_agent_phone_number: boolean;
  keep_listening: boolean;
  on_transfer_no_answer: 'return_to_assistant' | 'keep_retrying';
  require_speech_before_tool_call: boolean;
}

/** A stored tool of type built_in_transfer_to_agent. */
export interface StoredAgentTransfer {
  type: 'built_in_transfer_to_agent';
  name: string;
  description: string;
  agents_to_transfer_to: string[];
  require_speech_before_tool_call: boolean;
}

export type StoredTransferTool = StoredPhoneTransfer | StoredAgentTransfer;

/** A stored tool of one of the other built-in types: the built-in under its own name, description and config. */
export type StoredBuiltInTool =
  | {
      type: 'built_in_keypad_input' | 'built_in_natural_conversation_ending';
      name: string;
      description: string;
      speech_before_tool_call: SpeechBeforeToolCall | null;
    }
  | { type: 'built_in_choose_not_to_respond'; name: string; description: string; respond_after_sec: number | null };

/** Stored tools a request may reference in `tools`: their call becomes an action. */
export type StoredActionTool = StoredTransferTool | StoredBuiltInTool;
export const STORED_ACTION_TYPES: readonly string[] = [
  'built_in_transfer_to_phone_number',
  'built_in_transfer_to_agent',
  'built_in_keypad_input',
  'built_in_natural_conversation_ending',
  'built_in_choose_not_to_respond',
];

/** How a tool's call treats the speech of the same reply. */
export interface SpeechRule {
  /** The reply must say something before the call (generated when the model did not). */
  requireBefore: boolean;
  /** A call made after the model already spoke is dropped and the speech kept. */
  forbidCallAfterSpeech: boolean;
  /** The reply's speech is dropped when the call is made. */
  suppress: boolean;
}

export type OfferedTool =
  | { kind: 'inline'; name: string; definition: InlineToolDefinition; speech: SpeechRule }
  | { kind: 'keypad_input'; name: string; description?: string; speech: SpeechRule }
  | { kind: 'natural_conversation_ending'; name: string; description?: string; speech: SpeechRule }
  | {
      kind: 'choose_not_to_respond';
      name: string;
      description?: string;
      respondAfterSec: number | null;
      speech: SpeechRule;
    }
  | { kind: 'web_search'; name: string; speech: SpeechRule }
  | { kind: 'transfer_to_phone_number'; name: string; tool: StoredPhoneTransfer; speech: SpeechRule }
  | { kind: 'transfer_to_agent'; name: string; tool: StoredAgentTransfer; speech: SpeechRule };

/** RFC 4733 3.2 events a keypad sends: 0-9, *, #, A-D. */
export const DTMF_DIGITS_PATTERN = /^[0-9*#A-D]+$/;

export function speechRule(mode: SpeechBeforeToolCall = 'optional'): SpeechRule {
  return { requireBefore: mode === 'required', forbidCallAfterSpeech: false, suppress: mode === 'suppressed' };
}

const NO_PARAMETERS = { type: 'object', properties: {}, required: [], additionalProperties: false };

/** Fixed descriptions of the built-ins, built once. */
const BUILT_IN_DESCRIPTIONS = {
  keypad_input: 'Press keys on the phone keypad (DTMF), e.g. to navigate a phone menu.',
  natural_conversation_ending:
    'End the conversation when it has naturally come to its end (the user said goodbye or nothing is left to do).',
  choose_not_to_respond:
    'Say nothing this turn: the user is not talking to you, is not finished, or asked you to wait.',
  web_search: 'Search the web for current or factual information you do not know.',
} as const;

/** The function the model sees for an offered tool. */
export function functionFor(tool: OfferedTool): ChatFunctionTool {
  const fn = (description: string, parameters: Record<string, unknown>): ChatFunctionTool => ({
    type: 'function',
    function: { name: tool.name, description, parameters },
  });
  switch (tool.kind) {
    case 'inline':
      return fn(tool.definition.description, tool.definition.parameters);
    case 'keypad_input':
      return fn(tool.description ?? BUILT_IN_DESCRIPTIONS.keypad_input, {
        type: 'object',
        properties: { digits: { type: 'string', description: 'Keys to press, in order: 0-9, *, #' } },
        required: ['digits'],
        additionalProperties: false,
      });
    case 'natural_conversation_ending':
      return fn(tool.description ?? BUILT_IN_DESCRIPTIONS.natural_conversation_ending, NO_PARAMETERS);
    case 'choose_not_to_respond':
      return fn(tool.description ?? BUILT_IN_DESCRIPTIONS.choose_not_to_respond, NO_PARAMETERS);
    case 'web_search':
      return fn(BUILT_IN_DESCRIPTIONS.web_search, {
        type: 'object',
        properties: { query: { type: 'string', description: 'What to search for' } },
        required: ['query'],
        additionalProperties: false,
      });
    case 'transfer_to_phone_number': {
      const properties: Record<string, unknown> = {};
      const required: string[] = [];
      if (tool.tool.phone_number === null) {
        properties.phone_number = {
          type: 'string',
          description: 'E.164 number to transfer the call to, e.g. +14155550123',
        };
        required.push('phone_number');
      }
      if (tool.tool.dynamic_dtmf) {
        properties.dtmf = {
          type: 'string',
          description: 'Keys to press once the transfer connects (0-9, *, #), if any',
        };
      }
      return fn(tool.tool.description, { type: 'object', properties, required, additionalProperties: false });
    }
    case 'transfer_to_agent':
      return fn(tool.tool.description, {
        type: 'object',
        properties: {
          agent: { type: 'string', enum: tool.tool.agents_to_transfer_to, description: 'Agent to hand over to' },
        },
        required: ['agent'],
        additionalProperties: false,
      });
  }
}

/** Inline definitions, in request order, as offered tools. */
export function inlineTools(definitions: InlineToolDefinition[]): OfferedTool[] {
  return definitions.map((definition) => ({
    kind: 'inline',
    name: definition.name,
    definition,
    speech: {
      requireBefore: definition.require_speech_before_tool_call,
      forbidCallAfterSpeech: definition.forbid_tool_call_after_speech,
      suppress: false,
    },
  }));
}

/** A stored transfer or built-in tool as an offered tool. */
export function storedActionTool(tool: StoredActionTool): OfferedTool {
  const { name, description } = tool;
  switch (tool.type) {
    case 'built_in_transfer_to_phone_number':
    case 'built_in_transfer_to_agent': {
      const speech: SpeechRule = {
        requireBefore: tool.require_speech_before_tool_call,
        forbidCallAfterSpeech: false,
        suppress: false,
      };
      return tool.type === 'built_in_transfer_to_phone_number'
        ? { kind: 'transfer_to_phone_number', name, tool, speech }
        : { kind: 'transfer_to_agent', name, tool, speech };
    }
    case 'built_in_keypad_input':
      return { kind: 'keypad_input', name, description, speech: speechRule(tool.speech_before_tool_call ?? undefined) };
    case 'built_in_natural_conversation_ending':
      return {
        kind: 'natural_conversation_ending',
        name,
        description,
        speech: speechRule(tool.speech_before_tool_call ?? undefined),
      };
    case 'built_in_choose_not_to_respond':
      return {
        kind: 'choose_not_to_respond',
        name,
        description,
        respondAfterSec: tool.respond_after_sec,
        speech: speechRule(),
      };
  }
}
