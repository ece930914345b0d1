// Tools: the create/update request, the nine tool parameter rules, every per-type field rule, and the record a
// read returns. The one source of truth for tool requests and records.
//
// The tool parameter rules, numbered as the code below cites them:
//   1. Array form: each parameter is {type, name, description?, is_required?, location?}; names unique.
//   2. A POST custom_webhook gives every array parameter a location (GET: query_string by default, never
//      request_body).
//   3. custom_websocket and the transfer tools take no `location` on array parameters.
//   4. With the array form, `parameter_locations` is not sent.
//   5. JSON-Schema form: {type: "object", properties, required?, additionalProperties: false?}, properties using
//      only the keywords of PropertySchema, every `required` name among the properties, nesting at most
//      MAX_JSON_SCHEMA_DEPTH levels.
//   6. JSON-Schema form on a custom_webhook: `parameter_locations` names top-level properties only; POST gives
//      every property one; GET never request_body.
//   7. No parameter takes a reserved name (RESERVED_PARAMETER_NAMES): those are injected into every call.
//   8. custom_context, natural conversation ending, keypad input and choose not to respond take no parameters.
//   9. A read returns `parameters` in the form it was defined in.
import { z } from 'zod';
import { e164, publicHttpsUrlProblem, snakeCaseName, type UrlRules } from './common.js';

export const TOOL_TYPES = [
  'custom_context',
  'custom_webhook',
  'custom_websocket',
  'built_in_transfer_to_phone_number',
  'built_in_transfer_to_agent',
  'built_in_natural_conversation_ending',
  'built_in_keypad_input',
  'built_in_choose_not_to_respond',
] as const;
export type ToolType = (typeof TOOL_TYPES)[number];

export const PARAMETER_LOCATIONS = ['request_body', 'query_string', 'url_path'] as const;
export type ParameterLocation = (typeof PARAMETER_LOCATIONS)[number];
export const JSON_TYPES = ['string', 'integer', 'number', 'boolean', 'null', 'array', 'object'] as const;

/** Tool parameter rule 7: names injected into every call, so no parameter may take them. */
export const RESERVED_PARAMETER_NAMES = [
  'call_info',
  'conversation_id',
  'from_phone_number',
  'pre_tool_text',
  'to_phone_number',
  'telephony_call_sid',
] as const;
/** Tool parameter rule 5: JSON-Schema nesting at most 5 levels (the parameters object is 1). */
export const MAX_JSON_SCHEMA_DEPTH = 5;
/** endpoint_timeout_ms and tool_call_output_timeout_ms default to 5000 ms. */
export const DEFAULT_ENDPOINT_TIMEOUT_MS = 5000;
export const DEFAULT_TOOL_CALL_OUTPUT_TIMEOUT_MS = 5000;

const PHONE: readonly ToolType[] = ['built_in_transfer_to_phone_number'];
const CUSTOM: readonly ToolType[] = ['custom_context', 'custom_webhook', 'custom_websocket'];
const REMOTE: readonly ToolType[] = ['custom_webhook', 'custom_websocket'];

/** Per-type field rules: the types on which each optional field may be sent. */
export const FIELD_TYPES = {
  parameter_locations: ['custom_webhook'],
  endpoint_method: ['custom_webhook'],
  endpoint_url: ['custom_webhook'],
  endpoint_headers: ['custom_webhook'],
  endpoint_timeout_ms: ['custom_webhook'],
  tool_call_output_timeout_ms: ['custom_websocket'],
  phone_number: PHONE,
  dtmf: PHONE,
  dynamic_dtmf: PHONE,
  post_transfer_message: PHONE,
  use_agent_phone_number: PHONE,
  detect_voicemail: PHONE,
  keep_listening: PHONE,
  on_transfer_no_answer: PHONE,
  agents_to_transfer_to: ['built_in_transfer_to_agent'],
  speech_before_tool_call: ['built_in_natural_conversation_ending', 'built_in_keypad_input'],
  respond_after_sec: ['built_in_choose_not_to_respond'],
  wait_for_speech_before_tool_call: REMOTE,
  forbid_speech_after_tool_call: CUSTOM,
  forbid_tool_call_after_speech: REMOTE,
  allow_tool_chaining: CUSTOM,
  wait_for_response: REMOTE,
  uninterruptible: [...REMOTE, ...PHONE],
  context: ['custom_context'],
} as const satisfies Record<string, readonly ToolType[]>;

/** Tool parameter rules 3 and 8: the types whose array parameters take no `location`, and those with none. */
const NO_LOCATION_TYPES: readonly ToolType[] = [
  'custom_websocket',
  'built_in_transfer_to_phone_number',
  'built_in_transfer_to_agent',
];
const NO_PARAMETER_TYPES: readonly ToolType[] = [
  'custom_context',
  'built_in_natural_conversation_ending',
  'built_in_keypad_input',
  'built_in_choose_not_to_respond',
];

const parameterName = z
  .string()
  .regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'must be a letter or underscore, then letters, digits or underscores');

/** Tool parameter rule 1: one parameter of the array form. */
export const parameterDefinition = z.object({
  type: z.enum(JSON_TYPES),
  name: parameterName,
  description: z.string().optional(),
  is_required: z.boolean().optional(),
  location: z.enum(PARAMETER_LOCATIONS).optional(),
});
export type ParameterDefinition = z.infer<typeof parameterDefinition>;

/** Tool parameter rule 5: a property schema of the JSON-Schema form (only these keywords are accepted). */
export interface PropertySchema {
  type?: (typeof JSON_TYPES)[number];
  description?: string;
  enum?: string[];
  items?: PropertySchema;
  properties?: Record<string, PropertySchema>;
  required?: string[];
  additionalProperties?: false;
  anyOf?: PropertySchema[];
}
export const propertySchema: z.ZodType<PropertySchema> = z.lazy(() =>
  z.strictObject({
    type: z.enum(JSON_TYPES).optional(),
    description: z.string().optional(),
    enum: z.array(z.string()).min(1).optional(),
    items: propertySchema.optional(),
    properties: z.record(z.string(), propertySchema).optional(),
    required: z.array(z.string()).optional(),
    additionalProperties: z.literal(false, 'must be false').optional(),
    anyOf: z.array(propertySchema).min(1).optional(),
  }),
);

/**
 * The JSON-Schema form of `parameters` without the nesting check before parsing: for a caller that bounds the
 * depth itself (responses.ts reports its own depth errors, behind the request's nesting limit of safe-json.ts).
 */
export const parametersObjectShape = z.strictObject({
  type: z.literal('object', 'must be "object"'),
  properties: z.record(parameterName, propertySchema),
  required: z.array(z.string()).optional(),
  additionalProperties: z.literal(false, 'must be false').optional(),
});

/** Whether a property schema nests deeper than `levels` (itself counting as one), looking no deeper than that. */
function nestsDeeperThan(s: unknown, levels: number): boolean {
  if (levels < 1) return true;
  if (typeof s !== 'object' || s === null) return false;
  const { items, properties, anyOf } = s as { items?: unknown; properties?: unknown; anyOf?: unknown };
  if (items !== undefined && nestsDeeperThan(items, levels - 1)) return true;
  if (typeof properties === 'object' && properties !== null) {
    for (const child of Object.values(properties)) if (nestsDeeperThan(child, levels - 1)) return true;
  }
  if (Array.isArray(anyOf)) for (const child of anyOf) if (nestsDeeperThan(child, levels - 1)) return true;
  return false;
}

/**
 * Tool parameter rule 5's nesting, judged on the value as sent, before the recursive property schema parses it:
 * a schema nested far past the limit is refused at its top-level property without being walked to the bottom.
 */
function refuseDeepNesting(value: unknown, ctx: z.RefinementCtx): unknown {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return value;
  const properties = (value as { properties?: unknown }).properties;
  if (typeof properties !== 'object' || properties === null) return value;
  for (const [name, property] of Object.entries(properties)) {
    // The parameters object is level 1, so each property may nest MAX_JSON_SCHEMA_DEPTH - 1 levels.
    if (nestsDeeperThan(property, MAX_JSON_SCHEMA_DEPTH - 1)) {
      ctx.addIssue({
        code: 'custom',
        path: ['properties', name],
        message: `nesting depth must be at most ${MAX_JSON_SCHEMA_DEPTH}`,
        input: value,
      });
    }
  }
  return value;
}

/** Tool parameter rule 5: the JSON-Schema form of `parameters`, its nesting checked before it is parsed. */
export const parametersObject = z.preprocess(refuseDeepNesting, parametersObjectShape);
export type ParametersObject = z.infer<typeof parametersObject>;
/** `parameters` of a tool: the array form or the JSON-Schema form (rules 1 and 5). */
const toolParameters = z.preprocess(refuseDeepNesting, z.union([z.array(parameterDefinition), parametersObjectShape]));

const toolFields = (rules: UrlRules) => ({
  name: snakeCaseName,
  description: z.string().min(1, 'must not be empty'),
  type: z.enum(TOOL_TYPES),
  execution_mode: z.enum(['sync', 'async']),
  parameters: toolParameters,
  parameter_locations: z.record(z.string(), z.enum(PARAMETER_LOCATIONS)),
  endpoint_method: z.enum(['GET', 'POST']),
  endpoint_url: z.string().superRefine((url, ctx) => {
    const problem = endpointUrlProblem(url, rules);
    if (problem) ctx.addIssue({ code: 'custom', message: problem });
  }),
  endpoint_headers: z.record(z.string(), z.string()),
  endpoint_timeout_ms: z.number().int().positive(),
  tool_call_output_timeout_ms: z.number().int().positive(),
  phone_number: e164.nullable(),
  dtmf: z
    .string()
    .regex(/^[0-9A-Da-d*#wW,]+$/, 'must be DTMF digits (0-9, *, #, A-D; w or , to pause)')
    .nullable(),
  dynamic_dtmf: z.boolean(),
  post_transfer_message: z.string().nullable(),
  use_agent_phone_number: z.boolean(),
  detect_voicemail: z.boolean(),
  keep_listening: z.boolean(),
  on_transfer_no_answer: z.enum(['return_to_assistant', 'keep_retrying']),
  agents_to_transfer_to: z.array(z.string().min(1)).min(1, 'must name at least one agent'),
  require_speech_before_tool_call: z.boolean(),
  speech_before_tool_call: z.enum(['required', 'optional', 'suppressed']),
  respond_after_sec: z.number().positive().nullable(),
  wait_for_speech_before_tool_call: z.boolean(),
  forbid_speech_after_tool_call: z.boolean(),
  forbid_tool_call_after_speech: z.boolean(),
  allow_tool_chaining: z.boolean(),
  wait_for_response: z.boolean(),
  uninterruptible: z.boolean(),
  context: z.string().min(1, 'must not be empty'),
});
type ToolFields = ReturnType<typeof toolFields>;
export type ToolDefinition = { [K in 'name' | 'description' | 'type' | 'execution_mode']: z.output<ToolFields[K]> } & {
  [K in Exclude<keyof ToolFields, 'name' | 'description' | 'type' | 'execution_mode'>]?: z.output<ToolFields[K]>;
};

/** POST /v1/tools. The parsed value is the tool's definition as stored. */
export function toolCreateBody(rules: UrlRules) {
  return z
    .object(toolFields(rules))
    .partial()
    .required({ name: true, description: true, type: true, execution_mode: true })
    .superRefine((tool, ctx) => {
      for (const issue of toolRuleIssues(tool)) {
        ctx.addIssue({ code: 'custom', path: issue.path, message: issue.message });
      }
    });
}

/** PATCH /v1/tools/{nameOrId}: any subset of the fields; the merged definition is judged by toolCreateBody. */
export function toolUpdateBody(rules: UrlRules) {
  return z.object(toolFields(rules)).partial();
}
export type ToolUpdateBody = z.infer<ReturnType<typeof toolUpdateBody>>;

// ---- endpoint URL with placeholders -------------------------------------------------------------------------

const PLACEHOLDER = /\{([^{}]*)\}/g;

/** The `{name}` placeholders of an endpoint URL, in order. */
export function urlPlaceholders(url: string): string[] {
  return [...url.matchAll(PLACEHOLDER)].map((m) => m[1]);
}

/**
 * endpoint_url: a public HTTPS URL without credentials whose `{name}` placeholders sit in the path or the query
 * only. Judged by filling each placeholder with a marker and checking where the markers land.
 */
export function endpointUrlProblem(raw: string, rules: UrlRules): string | null {
  const names = urlPlaceholders(raw);
  if (raw.replace(PLACEHOLDER, '').match(/[{}]/)) return 'has an unbalanced { or } placeholder brace';
  if (names.some((n) => !/^[A-Za-z_][A-Za-z0-9_]*$/.test(n)))
    return 'placeholders must be {name} with a parameter name';
  const filled = raw.replace(PLACEHOLDER, 'PARLEYPLACEHOLDER');
  const problem = publicHttpsUrlProblem(filled, rules);
  if (problem) return problem;
  if (names.length === 0) return null;
  const url = new URL(filled);
  const outside = `${url.protocol}//${url.username}:${url.password}@${url.host}`;
  if (/parleyplaceholder/i.test(outside)) return 'placeholders may appear only in the path or the query';
  if (url.hash.includes('PARLEYPLACEHOLDER')) return 'placeholders may appear only in the path or the query';
  return null;
}

// ---- the rules that join fields -----------------------------------------------------------------------------

export interface ToolIssue {
  path: (string | number)[];
  message: string;
}

function propertyIssues(s: PropertySchema, path: (string | number)[], issues: ToolIssue[]): void {
  if (s.enum !== undefined && s.type !== 'string') {
    issues.push({ path: [...path, 'enum'], message: 'enum is allowed only on string parameters' });
  }
  for (const [i, r] of (s.required ?? []).entries()) {
    if (!s.properties || !(r in s.properties))
      issues.push({ path: [...path, 'required', i], message: `"${r}" is not in properties` });
  }
  if (s.items) propertyIssues(s.items, [...path, 'items'], issues);
  for (const [k, child] of Object.entries(s.properties ?? {}))
    propertyIssues(child, [...path, 'properties', k], issues);
  (s.anyOf ?? []).forEach((child, i) => propertyIssues(child, [...path, 'anyOf', i], issues));
}

/** Every rule that joins fields of a tool: the nine parameter rules, the per-type and the execution-mode rules. */
export function toolRuleIssues(tool: ToolDefinition): ToolIssue[] {
  const issues: ToolIssue[] = [];
  const add = (path: (string | number)[], message: string) => issues.push({ path, message });
  const { type } = tool;
  const isWebhook = type === 'custom_webhook';

  // Per-type field rules: a field sent on a type it does not belong to is an error.
  for (const [field, types] of Object.entries(FIELD_TYPES) as [keyof typeof FIELD_TYPES, readonly ToolType[]][]) {
    if (tool[field] !== undefined && !types.includes(type)) add([field], `is not allowed for ${type} tools`);
  }
  // Required per type.
  if (isWebhook) {
    if (tool.endpoint_method === undefined) add(['endpoint_method'], 'is required for custom_webhook tools');
    if (tool.endpoint_url === undefined) add(['endpoint_url'], 'is required for custom_webhook tools');
  }
  if (type === 'custom_context' && tool.context === undefined) add(['context'], 'is required for custom_context tools');
  if (type === 'built_in_transfer_to_agent' && tool.agents_to_transfer_to === undefined) {
    add(['agents_to_transfer_to'], 'is required for built_in_transfer_to_agent tools');
  }

  // Execution-mode rules.
  if (tool.wait_for_response !== undefined && REMOTE.includes(type) && tool.execution_mode !== 'async') {
    add(['wait_for_response'], 'is allowed only on async custom_webhook and custom_websocket tools');
  }
  if (tool.wait_for_response === true && (tool.allow_tool_chaining ?? true)) {
    add(['wait_for_response'], 'cannot be combined with allow_tool_chaining true (set allow_tool_chaining to false)');
  }
  if (tool.uninterruptible !== undefined && REMOTE.includes(type) && tool.execution_mode !== 'sync') {
    add(['uninterruptible'], 'is allowed only on sync custom_webhook and custom_websocket tools');
  }

  // Phone-transfer rules.
  if (type === 'built_in_transfer_to_phone_number') {
    const useAgentNumber = tool.use_agent_phone_number ?? true;
    const keepListening = tool.keep_listening ?? useAgentNumber;
    if (tool.detect_voicemail === true && !useAgentNumber) {
      add(['detect_voicemail'], 'requires use_agent_phone_number to be true');
    }
    if (!keepListening) {
      if (useAgentNumber) add(['keep_listening'], 'false requires use_agent_phone_number false');
      if (tool.detect_voicemail === true) add(['keep_listening'], 'false requires detect_voicemail false');
      if (tool.post_transfer_message != null)
        add(['post_transfer_message'], 'must be null when keep_listening is false');
      if (tool.on_transfer_no_answer === 'keep_retrying') {
        add(
          ['on_transfer_no_answer'],
          'keep_retrying needs a bridged transfer, so it is invalid when keep_listening is false',
        );
      }
    }
  }
  if (tool.agents_to_transfer_to) {
    const seen = new Set<string>();
    tool.agents_to_transfer_to.forEach((a, i) => {
      if (seen.has(a)) add(['agents_to_transfer_to', i], `duplicate agent "${a}"`);
      seen.add(a);
    });
  }

  parameterIssues(tool, add);
  return issues;
}

/** Tool parameter rules 1 to 8, and the endpoint URL placeholders they fill. */
function parameterIssues(tool: ToolDefinition, add: (path: (string | number)[], message: string) => void): void {
  const { type, parameters = [] } = tool;
  const isWebhook = type === 'custom_webhook';
  const method = tool.endpoint_method;
  const reserved: readonly string[] = RESERVED_PARAMETER_NAMES;

  // Rule 8.
  if (NO_PARAMETER_TYPES.includes(type)) {
    const empty = Array.isArray(parameters) ? parameters.length === 0 : false;
    if (!empty) add(['parameters'], `must be [] or omitted for ${type} tools`);
    return;
  }

  /** name -> {required, location} of every top-level parameter, to check the URL placeholders. */
  const placed = new Map<string, { required: boolean; location: ParameterLocation | undefined }>();

  if (Array.isArray(parameters)) {
    // Rule 4.
    if (tool.parameter_locations !== undefined)
      add(['parameter_locations'], 'must not be sent when parameters is an array');
    const names = new Set<string>();
    parameters.forEach((p, i) => {
      if (names.has(p.name)) add(['parameters', i, 'name'], `duplicate parameter "${p.name}"`);
      names.add(p.name);
      if (reserved.includes(p.name)) add(['parameters', i, 'name'], `"${p.name}" is a reserved parameter name`);
      if (NO_LOCATION_TYPES.includes(type) && p.location !== undefined) {
        add(['parameters', i, 'location'], `must not be given for ${type} tools`); // Rule 3.
      }
      if (isWebhook) {
        if (method === 'POST' && p.location === undefined)
          add(['parameters', i, 'location'], 'is required for POST webhook tools'); // Rule 2.
        if (method === 'GET' && p.location === 'request_body')
          add(['parameters', i, 'location'], 'request_body is not allowed for GET webhook tools');
      }
      const location = p.location ?? (isWebhook && method === 'GET' ? 'query_string' : undefined);
      placed.set(p.name, { required: p.is_required === true, location });
    });
  } else {
    // Rule 5 (its nesting is checked before parsing: refuseDeepNesting).
    const required = parameters.required ?? [];
    required.forEach((r, i) => {
      if (!(r in parameters.properties)) add(['parameters', 'required', i], `"${r}" is not in properties`);
    });
    for (const name of Object.keys(parameters.properties)) {
      if (reserved.includes(name)) add(['parameters', 'properties', name], `"${name}" is a reserved parameter name`); // Rule 7.
    }
    const nested: ToolIssue[] = [];
    for (const [name, prop] of Object.entries(parameters.properties))
      propertyIssues(prop, ['parameters', 'properties', name], nested);
    for (const n of nested) add(n.path, n.message);
    // Rule 6.
    const locations = tool.parameter_locations;
    if (isWebhook) {
      for (const [key, loc] of Object.entries(locations ?? {})) {
        if (!(key in parameters.properties)) add(['parameter_locations', key], `"${key}" is not a top-level parameter`);
        else if (method === 'GET' && loc === 'request_body')
          add(['parameter_locations', key], 'request_body is not allowed for GET webhook tools');
      }
      if (method === 'POST') {
        for (const name of Object.keys(parameters.properties)) {
          if (locations?.[name] === undefined)
            add(['parameter_locations', name], 'is required for every parameter of a POST webhook tool');
        }
      }
    }
    for (const name of Object.keys(parameters.properties)) {
      const location = locations?.[name] ?? (isWebhook && method === 'GET' ? 'query_string' : undefined);
      placed.set(name, { required: required.includes(name), location });
    }
  }

  // endpoint_url placeholders: each filled by a required url_path parameter, and each url_path parameter used.
  // (A URL whose placeholders sit in the wrong place already has its own issue.)
  const urlStructure =
    tool.endpoint_url === undefined
      ? 'absent'
      : endpointUrlProblem(tool.endpoint_url, { PARLEY_ALLOW_PRIVATE_ENDPOINTS: true });
  if (isWebhook && tool.endpoint_url !== undefined && urlStructure === null) {
    const holes = new Set(urlPlaceholders(tool.endpoint_url));
    for (const hole of holes) {
      const p = placed.get(hole);
      if (!p || p.location !== 'url_path' || !p.required) {
        add(['endpoint_url'], `placeholder {${hole}} must be filled by a required parameter with location url_path`);
      }
    }
    for (const [name, p] of placed) {
      if (p.location !== 'url_path') continue;
      const at = Array.isArray(parameters)
        ? ['parameters', parameters.findIndex((q) => q.name === name), 'location']
        : ['parameter_locations', name];
      if (!holes.has(name)) add(at, `url_path parameter "${name}" has no {${name}} placeholder in endpoint_url`);
      else if (!p.required) add(at, `url_path parameter "${name}" must be required`);
    }
  }
}

// ---- the record a read returns ------------------------------------------------------------------------------

/** The defaults of each optional field for the types it belongs to. */
function typeDefaults(tool: ToolDefinition): Partial<ToolDefinition> {
  switch (tool.type) {
    case 'custom_context':
      return { forbid_speech_after_tool_call: false, allow_tool_chaining: true };
    case 'custom_webhook':
    case 'custom_websocket': {
      const remote: Partial<ToolDefinition> = {
        wait_for_speech_before_tool_call: false,
        forbid_speech_after_tool_call: false,
        forbid_tool_call_after_speech: false,
        allow_tool_chaining: true,
        ...(tool.execution_mode === 'async' ? { wait_for_response: false } : { uninterruptible: false }),
      };
      return tool.type === 'custom_webhook'
        ? { ...remote, endpoint_headers: {}, endpoint_timeout_ms: DEFAULT_ENDPOINT_TIMEOUT_MS }
        : { ...remote, tool_call_output_timeout_ms: DEFAULT_TOOL_CALL_OUTPUT_TIMEOUT_MS };
    }
    case 'built_in_transfer_to_phone_number': {
      const useAgentNumber = tool.use_agent_phone_number ?? true;
      return {
        phone_number: null,
        dtmf: null,
        dynamic_dtmf: false,
        post_transfer_message: null,
        use_agent_phone_number: useAgentNumber,
        detect_voicemail: false,
        keep_listening: true, // A read's default; create stores its own (toStoredDefinition).
        on_transfer_no_answer: 'return_to_assistant',
        uninterruptible: true,
      };
    }
    case 'built_in_choose_not_to_respond':
      return { respond_after_sec: null };
    default:
      return {};
  }
}

/**
 * The definition as stored at create: what was sent, with keep_listening fixed to its create-time default so a
 * later change of use_agent_phone_number does not silently change it.
 */
export function toStoredDefinition(tool: ToolDefinition): ToolDefinition {
  if (tool.type !== 'built_in_transfer_to_phone_number' || tool.keep_listening !== undefined) return tool;
  return { ...tool, keep_listening: tool.use_agent_phone_number ?? true };
}

/** The tool as a read returns it: parameters as defined (rule 9), every field of its type with its default. */
export function toolView(id: string, project: { id: string; name: string }, def: ToolDefinition) {
  const { name, description, type, execution_mode, parameters = [], parameter_locations, ...rest } = def;
  return {
    id,
    name,
    description,
    type,
    execution_mode,
    parameters,
    ...(parameter_locations !== undefined ? { parameter_locations } : {}),
    require_speech_before_tool_call: false,
    ...typeDefaults(def),
    ...rest,
    project,
  };
}

/** The tool record of get and list (a list response adds id and project; execution_mode optional). */
export const toolRecord = z
  .object({
    id: z.string(),
    name: z.string(),
    description: z.string(),
    type: z.enum(TOOL_TYPES),
    execution_mode: z.enum(['sync', 'async']).optional(),
    parameters: z.union([z.array(parameterDefinition), parametersObjectShape]),
    parameter_locations: z.record(z.string(), z.enum(PARAMETER_LOCATIONS)).optional(),
    project: z.object({ id: z.string(), name: z.string() }),
  })
  .catchall(z.unknown());
export type ToolRecord = z.infer<typeof toolRecord>;
