// POST /v1/responses: the request body with every rule, and the response.
import { z } from 'zod';
import { vendorModel } from './agents.js';
import { e164, lang } from './common.js';
import {
  MAX_JSON_SCHEMA_DEPTH,
  parametersObjectShape,
  RESERVED_PARAMETER_NAMES,
  type PropertySchema,
} from './tools.js';

// ---- inline JSON-Schema parameters (tool parameter rules 5 and 7, src/schemas/tools.ts) --------------------

type Issue = { path: (string | number)[]; message: string };

/** Rule-5 problems of one property schema at `depth` (the top-level object is depth 1). */
function schemaIssues(s: PropertySchema, depth: number, path: (string | number)[], out: Issue[]): void {
  if (depth > MAX_JSON_SCHEMA_DEPTH) {
    out.push({ path, message: `nesting is deeper than ${MAX_JSON_SCHEMA_DEPTH} levels` });
    return;
  }
  if (s.enum && s.type !== 'string')
    out.push({ path: [...path, 'enum'], message: 'enum is only allowed on string parameters' });
  if (s.items && s.type !== 'array')
    out.push({ path: [...path, 'items'], message: 'items is only allowed on array parameters' });
  if ((s.properties || s.required || s.additionalProperties !== undefined) && s.type !== 'object') {
    out.push({ path, message: 'properties, required and additionalProperties are only allowed on object parameters' });
  }
  if (s.type === 'object') {
    for (const [i, name] of (s.required ?? []).entries()) {
      if (!s.properties || !(name in s.properties)) {
        out.push({ path: [...path, 'required', i], message: `'${name}' is not in properties` });
      }
    }
    for (const [name, child] of Object.entries(s.properties ?? {}))
      schemaIssues(child, depth + 1, [...path, 'properties', name], out);
  }
  if (s.items) schemaIssues(s.items, depth + 1, [...path, 'items'], out);
  for (const [i, alt] of (s.anyOf ?? []).entries()) schemaIssues(alt, depth + 1, [...path, 'anyOf', i], out);
}

/** Tool parameter rule 5 (tools.ts parametersObject) with its nesting, `required`, `enum` and rule-7 checks. */
export const jsonSchemaParameters = parametersObjectShape.superRefine((schema, ctx) => {
  const issues: Issue[] = [];
  for (const name of Object.keys(schema.properties)) {
    if ((RESERVED_PARAMETER_NAMES as readonly string[]).includes(name)) {
      issues.push({ path: ['properties', name], message: `'${name}' is a reserved parameter name` });
    }
  }
  schemaIssues({ ...schema, type: 'object' }, 1, [], issues);
  for (const issue of issues) ctx.addIssue({ code: 'custom', path: issue.path, message: issue.message });
});
export type JsonSchemaParameters = z.infer<typeof jsonSchemaParameters>;

// ---- tools -----------------------------------------------------------------------------------------------

/** Built-in tools a request may name in `tools`. */
export const BUILT_IN_TOOLS = [
  'keypad_input',
  'natural_conversation_ending',
  'choose_not_to_respond',
  'web_search',
] as const;
export type BuiltInToolName = (typeof BUILT_IN_TOOLS)[number];
/** Names no inline tool definition may take: the built-ins, and the functions transfers are offered as. */
export const RESERVED_TOOL_NAMES: readonly string[] = [
  ...BUILT_IN_TOOLS,
  'transfer_to_phone_number',
  'transfer_to_agent',
];

export const speechBeforeToolCall = z.enum(['required', 'optional', 'suppressed']);
export type SpeechBeforeToolCall = z.infer<typeof speechBeforeToolCall>;
const speechConfig = z.strictObject({ speech_before_tool_call: speechBeforeToolCall.optional() });
const respondAfterConfig = z.strictObject({ respond_after_sec: z.number().positive().nullable().optional() });

const builtInReference = z.discriminatedUnion('name', [
  z.strictObject({
    type: z.literal('built_in'),
    name: z.literal('keypad_input'),
    tool_config: speechConfig.optional(),
  }),
  z.strictObject({
    type: z.literal('built_in'),
    name: z.literal('natural_conversation_ending'),
    tool_config: speechConfig.optional(),
  }),
  z.strictObject({ type: z.literal('built_in'), name: z.literal('web_search'), tool_config: speechConfig.optional() }),
  z.strictObject({
    type: z.literal('built_in'),
    name: z.literal('choose_not_to_respond'),
    tool_config: respondAfterConfig.optional(),
  }),
]);
/** A bare name (a built-in with its default configuration, or a stored tool) or a configured built-in. */
export const responsesTool = z.union([z.string().min(1).max(64), builtInReference], {
  error: (issue) => {
    const objectBranch = (issue as { errors?: { path: PropertyKey[]; message: string }[][] }).errors?.[1]?.[0];
    if (typeof issue.input !== 'object' || issue.input === null || !objectBranch) {
      return `must be a tool name or {type: built_in, name: ${BUILT_IN_TOOLS.join(' | ')}, tool_config?}`;
    }
    return objectBranch.path.length > 0
      ? `${objectBranch.path.join('.')}: ${objectBranch.message}`
      : objectBranch.message;
  },
});
export type ResponsesTool = z.infer<typeof responsesTool>;

/** Where an argument of an inline tool goes in its `tool_calls` entry (default `request_body`). */
export const inlineParameterLocation = z.enum(['request_body', 'query_string']);

export const inlineToolDefinition = z.strictObject({
  name: z.string().regex(/^[a-zA-Z0-9_-]{1,64}$/, 'must be 1 to 64 letters, digits, underscores or hyphens'),
  description: z.string().min(1),
  parameters: jsonSchemaParameters,
  /** Parley's extension: top-level parameters placed in `query_params` instead of `request_body`. */
  parameter_locations: z.record(z.string(), inlineParameterLocation).optional(),
  require_speech_before_tool_call: z.boolean().default(true),
  forbid_tool_call_after_speech: z.boolean().default(false),
});
export type InlineToolDefinition = z.infer<typeof inlineToolDefinition>;

// ---- input items -----------------------------------------------------------------------------------------

const argumentsMap = z.record(z.string(), z.unknown());
export const inputToolCall = z.strictObject({
  tool_call_id: z.string().min(1),
  tool: z.strictObject({ name: z.string().min(1), id: z.string().optional() }),
  request_body: argumentsMap.nullish(),
  query_params: z.record(z.string(), z.string()).nullish(),
});
export type InputToolCall = z.infer<typeof inputToolCall>;

export const action = z.discriminatedUnion('type', [
  z.strictObject({
    type: z.literal('assistant_chose_not_to_respond'),
    respond_after_sec: z.number().nullable().optional(),
  }),
  z.strictObject({ type: z.literal('assistant_ended_conversation') }),
  z.strictObject({ type: z.literal('dtmf'), digits: z.string() }),
  z.strictObject({
    type: z.literal('transfer_to_phone_number'),
    phone_number: e164,
    detect_voicemail: z.boolean(),
    use_agent_phone_number: z.boolean(),
    keep_listening: z.boolean(),
    on_transfer_no_answer: z.enum(['return_to_assistant', 'keep_retrying']),
    dtmf: z.string().nullable(),
  }),
  z.strictObject({ type: z.literal('transfer_to_agent'), agent: z.string() }),
]);
export type Action = z.infer<typeof action>;

export const userItem = z.strictObject({ role: z.literal('user'), text: z.string() });
export const assistantItem = z.strictObject({
  role: z.literal('assistant'),
  text: z.string().default(''),
  tool_calls: z.array(inputToolCall).optional(),
  action: action.optional(),
});
export const toolCallOutputItem = z.strictObject({
  type: z.literal('tool_call_output'),
  tool_call_id: z.string().min(1),
  response_body: z.unknown().optional(),
  response_status_code: z.number().int().nullish(),
  timed_out: z.boolean().optional(),
  error_message: z.string().nullish(),
  interrupted: z.boolean().optional(),
});
/** Names the problem of the item form the input was meant to be, rather than zod's bare "Invalid input". */
function inputItemError(issue: { input?: unknown; errors?: { path: PropertyKey[]; message: string }[][] }): string {
  const item = issue.input as Record<string, unknown> | null | undefined;
  const form =
    item && typeof item === 'object'
      ? 'type' in item
        ? 2
        : item.role === 'assistant'
          ? 1
          : item.role === 'user'
            ? 0
            : -1
      : -1;
  const first = form >= 0 ? issue.errors?.[form]?.[0] : undefined;
  if (!first)
    return 'must be {role: user, text}, {role: assistant, text, tool_calls?, action?} or {type: tool_call_output, tool_call_id, ...}';
  return first.path.length > 0 ? `${first.path.join('.')}: ${first.message}` : first.message;
}
export const inputItem = z.union([userItem, assistantItem, toolCallOutputItem], { error: inputItemError });
export type InputItem = z.infer<typeof inputItem>;
export type AssistantItem = z.infer<typeof assistantItem>;
export type ToolCallOutputItem = z.infer<typeof toolCallOutputItem>;

// ---- cross-field rules -----------------------------------------------------------------------------------

/** Rules across input items. */
function inputIssues(input: InputItem[]): Issue[] {
  const out: Issue[] = [];
  const callIds = new Set<string>();
  const outputIds = new Set<string>();
  /** Call ids of the last assistant item whose outputs must come next, in any order. */
  let pending = new Set<string>();
  for (const [i, item] of input.entries()) {
    if ('type' in item) {
      if (outputIds.has(item.tool_call_id)) {
        out.push({ path: [i, 'tool_call_id'], message: `a second output for tool call '${item.tool_call_id}'` });
      } else if (!pending.has(item.tool_call_id)) {
        out.push({
          path: [i, 'tool_call_id'],
          message: callIds.has(item.tool_call_id)
            ? `the output of tool call '${item.tool_call_id}' must follow its call immediately`
            : `no assistant tool call '${item.tool_call_id}' precedes this output`,
        });
      }
      if (
        item.response_body === undefined &&
        item.response_status_code == null &&
        item.error_message == null &&
        item.timed_out === undefined &&
        item.interrupted === undefined
      ) {
        out.push({
          path: [i],
          message:
            'must record an outcome: response_body, response_status_code, error_message, timed_out or interrupted',
        });
      }
      pending.delete(item.tool_call_id);
      outputIds.add(item.tool_call_id);
      continue;
    }
    if (pending.size > 0) {
      out.push({ path: [i], message: `expected the output of tool call '${[...pending][0]}' before this item` });
      pending = new Set();
    }
    if (item.role === 'user') continue;
    const calls = item.tool_calls ?? [];
    if (item.text === '' && item.tool_calls === undefined && item.action === undefined) {
      out.push({ path: [i], message: 'an assistant item must carry text, tool_calls or action' });
    }
    if (item.tool_calls !== undefined && item.action !== undefined) {
      out.push({ path: [i, 'action'], message: 'tool_calls and action cannot both be present' });
    }
    for (const [j, call] of calls.entries()) {
      if (callIds.has(call.tool_call_id)) {
        out.push({
          path: [i, 'tool_calls', j, 'tool_call_id'],
          message: `tool_call_id '${call.tool_call_id}' is not unique`,
        });
      }
      callIds.add(call.tool_call_id);
      pending.add(call.tool_call_id);
      for (const arg of Object.keys(call.request_body ?? {})) {
        if (call.query_params && arg in call.query_params) {
          out.push({ path: [i, 'tool_calls', j, 'query_params', arg], message: `'${arg}' is also in request_body` });
        }
      }
    }
  }
  if (pending.size > 0) {
    out.push({
      path: [input.length - 1],
      message: `the output of tool call '${[...pending][0]}' must follow its call`,
    });
  }
  return out;
}

export function toolReferenceName(tool: ResponsesTool): string {
  return typeof tool === 'string' ? tool : tool.name;
}

/** The body schema; `maxResponses` is PARLEY_RESPONSES_MAX. */
export function responsesRequestBody(maxResponses: number) {
  return z
    .strictObject({
      system_prompt: z.string(),
      input: z.array(inputItem).min(1, 'must hold at least one item'),
      voice_id: z.string().min(1).default('sabrina'),
      default_language: lang.optional(),
      additional_languages: z.array(lang).default([]),
      tool_definitions: z.array(inlineToolDefinition).default([]),
      project: z.string().min(1).optional(),
      tools: z.array(responsesTool).default([]),
      vendor_model: vendorModel.optional(),
      num_responses: z
        .number()
        .int()
        .min(1)
        .max(maxResponses, `must be at most ${maxResponses} (PARLEY_RESPONSES_MAX)`)
        .default(1),
    })
    .superRefine((body, ctx) => {
      const add = (path: (string | number)[], message: string) => ctx.addIssue({ code: 'custom', path, message });
      for (const issue of inputIssues(body.input)) add(['input', ...issue.path], issue.message);

      const languages = new Set<string>();
      for (const [i, l] of body.additional_languages.entries()) {
        if (l === body.default_language) add(['additional_languages', i], 'must not include default_language');
        else if (languages.has(l)) add(['additional_languages', i], `'${l}' is listed twice`);
        languages.add(l);
      }

      const toolNames = new Set<string>();
      for (const [i, tool] of body.tools.entries()) {
        const name = toolReferenceName(tool);
        if (toolNames.has(name)) add(['tools', i], `tool '${name}' is listed twice`);
        toolNames.add(name);
      }
      const definitionNames = new Set<string>();
      for (const [i, def] of body.tool_definitions.entries()) {
        if (definitionNames.has(def.name)) add(['tool_definitions', i, 'name'], `tool '${def.name}' is defined twice`);
        else if (toolNames.has(def.name)) add(['tool_definitions', i, 'name'], `'${def.name}' is also named in tools`);
        else if (RESERVED_TOOL_NAMES.includes(def.name)) {
          add(['tool_definitions', i, 'name'], `'${def.name}' is reserved for a built-in tool`);
        }
        definitionNames.add(def.name);
        for (const [param, location] of Object.entries(def.parameter_locations ?? {})) {
          if (!(param in def.parameters.properties)) {
            add(['tool_definitions', i, 'parameter_locations', param], `'${param}' is not a parameter (${location})`);
          }
        }
      }
    });
}
export type ResponsesRequestBody = z.infer<ReturnType<typeof responsesRequestBody>>;

// ---- response --------------------------------------------------------------------------------------------

export const generatedToolCall = z.object({
  tool_call_id: z.string(),
  tool: z.object({ name: z.string() }),
  request_body: z.record(z.string(), z.unknown()).optional(),
  query_params: z.record(z.string(), z.string()).optional(),
});
export type GeneratedToolCall = z.infer<typeof generatedToolCall>;

export const generatedResponse = z.object({
  text: z.string(),
  tool_calls: z.array(generatedToolCall),
  action: action.optional(),
});
export type GeneratedResponse = z.infer<typeof generatedResponse>;

export const responsesResponseBody = z.object({ responses: z.array(generatedResponse) });
export type ResponsesResponseBody = z.infer<typeof responsesResponseBody>;
