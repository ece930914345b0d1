// The tools of a live conversation, as LiveTool entries: the stored tools the agent names, the built-ins it names by
// their bare id (`keypad_input`, `natural_conversation_ending`, `choose_not_to_respond`, `web_search`) with the
// agent's built_in_tool_configs over their defaults, and inline WebSocket tools; and the function each offers the
// engine (JSON-Schema parameters).
import type { EngineTool } from '../../engines/engine.js';
import type { BUILT_IN_TOOL_IDS } from '../../domain/agent-write.js';
import {
  DEFAULT_ENDPOINT_TIMEOUT_MS,
  DEFAULT_TOOL_CALL_OUTPUT_TIMEOUT_MS,
  type ToolDefinition,
  type ToolType,
} from '../../schemas/tools.js';
import type { InlineWebSocketTool } from '../../schemas/sts.js';
import { transferParameters } from './phone-transfer.js';
import { toolRules } from './speech-rules.js';

/** The web_search built-in: named by agents, not a stored tool type. */
export const WEB_SEARCH_TYPE = 'built_in_web_search';
export type LiveToolType = ToolType | typeof WEB_SEARCH_TYPE;

/** web_search's definition: a built-in's fields, its speech rule from built_in_tool_configs. */
export interface WebSearchDefinition {
  type: typeof WEB_SEARCH_TYPE;
  name: string;
  description: string;
  execution_mode: 'sync';
  speech_before_tool_call?: ToolDefinition['speech_before_tool_call'];
}

export type LiveDefinition = ToolDefinition | WebSearchDefinition;

export interface LiveTool {
  id: string;
  name: string;
  type: LiveToolType;
  definition: LiveDefinition;
}

/** Inline tools have no stored id; the record names them by this. */
export const INLINE_TOOL_ID = 'inline';
/** Built-ins named by their bare id have no stored id either. */
export const BUILT_IN_TOOL_ID = 'built_in';

export type BuiltInToolId = (typeof BUILT_IN_TOOL_IDS)[number];

/** Each built-in an agent may name by its id: its type and the description the model reads. */
const BUILT_INS = {
  keypad_input: {
    type: 'built_in_keypad_input',
    description: 'Press keys on the phone keypad (DTMF), e.g. to navigate a phone menu.',
  },
  natural_conversation_ending: {
    type: 'built_in_natural_conversation_ending',
    description:
      'End the conversation when it has naturally come to its end (the user said goodbye or nothing is left to do).',
  },
  choose_not_to_respond: {
    type: 'built_in_choose_not_to_respond',
    description: 'Say nothing this turn: the user is not talking to you, is not finished, or asked you to wait.',
  },
  web_search: {
    type: WEB_SEARCH_TYPE,
    description: 'Search the web for current or factual information you do not know.',
  },
} as const satisfies Record<BuiltInToolId, { type: LiveToolType; description: string }>;

const SPEECH_MODES: readonly unknown[] = ['required', 'optional', 'suppressed'];

export function isBuiltInId(name: string): name is BuiltInToolId {
  return Object.hasOwn(BUILT_INS, name);
}

/**
 * The built-in `id` with the agent's `config` for it (built_in_tool_configs[id]) over its defaults:
 * speech_before_tool_call for keypad_input, natural_conversation_ending and web_search, respond_after_sec for
 * choose_not_to_respond. A key it does not take, or a value out of its range, is left out and reported.
 */
export function builtInTool(
  id: BuiltInToolId,
  config: Readonly<Record<string, unknown>> | undefined,
  problems: string[],
): LiveTool {
  const { type, description } = BUILT_INS[id];
  const definition = { name: id, description, type, execution_mode: 'sync' } as LiveDefinition;
  for (const [key, value] of Object.entries(config ?? {})) {
    const at = `built_in_tool_configs.${id}.${key}`;
    if (key === 'speech_before_tool_call' && id !== 'choose_not_to_respond') {
      if (SPEECH_MODES.includes(value))
        definition.speech_before_tool_call = value as NonNullable<LiveDefinition['speech_before_tool_call']>;
      else problems.push(`${at} must be required, optional or suppressed; the default (optional) applies`);
    } else if (key === 'respond_after_sec' && id === 'choose_not_to_respond') {
      if (value === null || (typeof value === 'number' && value > 0))
        (definition as ToolDefinition).respond_after_sec = value;
      else problems.push(`${at} must be a positive number of seconds or null; the default (null: stay silent) applies`);
    } else {
      problems.push(`${at} is not a setting of ${id}; ignored`);
    }
  }
  return { id: BUILT_IN_TOOL_ID, name: id, type, definition };
}

export function fromInline(tool: InlineWebSocketTool): LiveTool {
  const fn = tool.tool_schema.function;
  return {
    id: INLINE_TOOL_ID,
    name: fn.name,
    type: 'custom_websocket',
    definition: {
      name: fn.name,
      description: fn.description,
      type: 'custom_websocket',
      execution_mode: tool.execution_mode ?? 'sync',
      parameters: fn.parameters ?? { type: 'object', properties: {} },
      tool_call_output_timeout_ms: tool.tool_call_output_timeout_ms ?? DEFAULT_TOOL_CALL_OUTPUT_TIMEOUT_MS,
      require_speech_before_tool_call: tool.require_speech_before_tool_call,
      wait_for_speech_before_tool_call: tool.wait_for_speech_before_tool_call,
      forbid_speech_after_tool_call: tool.forbid_speech_after_tool_call,
      allow_tool_chaining: tool.allow_tool_chaining,
      wait_for_response: tool.wait_for_response,
    },
  };
}

export function fromStored(tool: { id: string; name: string; definition: Record<string, unknown> }): LiveTool {
  const definition = tool.definition as unknown as ToolDefinition;
  return { id: tool.id, name: tool.name, type: definition.type, definition };
}

/** Where a conversation's tools come from (its settings, and the stored tools resolved for them). */
export interface ToolSources {
  /** The agent's `tools`: stored tool names and bare built-in ids, in order. */
  names: readonly string[];
  /** The stored tools resolved for those names (a bare built-in id always means the built-in, never one of these). */
  stored: readonly { id: string; name: string; definition: Record<string, unknown> }[];
  inline: readonly InlineWebSocketTool[];
  builtInConfigs: Readonly<Record<string, Readonly<Record<string, unknown>>>>;
  /** PARLEY_WEB_SEARCH_URL is set: web_search can run. */
  webSearch: boolean;
}

/**
 * The live tools by name: the names in order (built-ins by id, stored tools by name; a name with no stored tool is
 * left out), then the inline tools (an inline tool replaces a named one of the same name). `problems` says what
 * was left out or ignored and why (web_search without a search endpoint, a built-in config out of range).
 */
export function liveTools(sources: ToolSources): { tools: Map<string, LiveTool>; problems: string[] } {
  const tools = new Map<string, LiveTool>();
  const problems: string[] = [];
  for (const name of sources.names) {
    if (isBuiltInId(name)) {
      if (name === 'web_search' && !sources.webSearch) {
        problems.push('web_search needs a search endpoint (PARLEY_WEB_SEARCH_URL is not set): the tool is not offered');
        continue;
      }
      tools.set(name, builtInTool(name, sources.builtInConfigs[name], problems));
      continue;
    }
    const stored = sources.stored.find((t) => t.name === name);
    if (stored) tools.set(name, fromStored(stored));
  }
  for (const t of sources.inline) tools.set(t.tool_schema.function.name, fromInline(t));
  return { tools, problems };
}

/** The names of `names` the store must resolve: all but the bare built-in ids. */
export function storedToolNames(names: readonly string[]): string[] {
  return names.filter((n) => !isBuiltInId(n));
}

const BUILT_IN_PARAMETERS: Partial<Record<LiveToolType, EngineTool['parameters']>> = {
  built_in_natural_conversation_ending: { type: 'object', properties: {} },
  built_in_keypad_input: {
    type: 'object',
    properties: { digits: { type: 'string', description: 'DTMF digits to press: 0-9, *, #' } },
    required: ['digits'],
  },
  built_in_choose_not_to_respond: { type: 'object', properties: {} },
  built_in_transfer_to_agent: {
    type: 'object',
    properties: { agent_name: { type: 'string', description: 'The agent to transfer to' } },
    required: ['agent_name'],
  },
  [WEB_SEARCH_TYPE]: {
    type: 'object',
    properties: { query: { type: 'string', description: 'What to search for' } },
    required: ['query'],
  },
};

/** Array-form parameters as JSON Schema (location is where a webhook puts them, not part of the schema). */
function jsonSchema(def: LiveDefinition): EngineTool['parameters'] {
  if (def.type === 'built_in_transfer_to_phone_number') return transferParameters(def);
  const builtIn = BUILT_IN_PARAMETERS[def.type];
  if (builtIn) {
    if (def.type === 'built_in_transfer_to_agent' && def.agents_to_transfer_to) {
      return { ...builtIn, properties: { agent_name: { type: 'string', enum: def.agents_to_transfer_to } } };
    }
    return builtIn;
  }
  if (def.type === WEB_SEARCH_TYPE) return { type: 'object', properties: {} };
  const p = def.parameters;
  if (!p) return { type: 'object', properties: {} };
  if (!Array.isArray(p)) return { type: 'object', properties: p.properties, required: p.required ?? [] };
  const properties: Record<string, unknown> = {};
  const required: string[] = [];
  for (const param of p) {
    properties[param.name] = { type: param.type, ...(param.description ? { description: param.description } : {}) };
    if (param.is_required) required.push(param.name);
  }
  return { type: 'object', properties, required };
}

export function engineTool(tool: LiveTool): EngineTool {
  const out: EngineTool = {
    name: tool.name,
    description: tool.definition.description,
    parameters: jsonSchema(tool.definition),
  };
  if (toolRules(tool.definition).speechBefore === 'suppressed') out.speechSuppressed = true;
  return out;
}

export function endpointTimeoutMs(def: ToolDefinition): number {
  return def.endpoint_timeout_ms ?? DEFAULT_ENDPOINT_TIMEOUT_MS;
}
export function outputTimeoutMs(def: ToolDefinition): number {
  return def.tool_call_output_timeout_ms ?? DEFAULT_TOOL_CALL_OUTPUT_TIMEOUT_MS;
}
