// The tools of a live conversation: stored definitions (custom and built-in) and inline WebSocket tools, as
// LiveTool entries, and the function each offers the engine (JSON-Schema parameters).
import type { EngineTool } from '../../engines/engine.js';
import { DEFAULT_ENDPOINT_TIMEOUT_MS, DEFAULT_TOOL_CALL_OUTPUT_TIMEOUT_MS, type ToolDefinition, type ToolType } from '../../schemas/tools.js';
import type { InlineWebSocketTool } from '../../schemas/sts.js';

export interface LiveTool {
  id: string;
  name: string;
  type: ToolType;
  definition: ToolDefinition;
}

/** Inline tools have no stored id; the record names them by this. */
export const INLINE_TOOL_ID = 'inline';

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

const BUILT_IN_PARAMETERS: Partial<Record<ToolType, EngineTool['parameters']>> = {
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
  built_in_transfer_to_phone_number: { type: 'object', properties: {} },
};

/** Array-form parameters as JSON Schema (location is where a webhook puts them, not part of the schema). */
function jsonSchema(def: ToolDefinition): EngineTool['parameters'] {
  const builtIn = BUILT_IN_PARAMETERS[def.type];
  if (builtIn) {
    if (def.type === 'built_in_transfer_to_agent' && def.agents_to_transfer_to) {
      return { ...builtIn, properties: { agent_name: { type: 'string', enum: def.agents_to_transfer_to } } };
    }
    return builtIn;
  }
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
  return { name: tool.name, description: tool.definition.description, parameters: jsonSchema(tool.definition) };
}

export function endpointTimeoutMs(def: ToolDefinition): number {
  return def.endpoint_timeout_ms ?? DEFAULT_ENDPOINT_TIMEOUT_MS;
}
export function outputTimeoutMs(def: ToolDefinition): number {
  return def.tool_call_output_timeout_ms ?? DEFAULT_TOOL_CALL_OUTPUT_TIMEOUT_MS;
}
