// custom_webhook: one HTTP call per tool call. Parameters go where `parameter_locations` (or an array parameter's
// `location`) puts them: the JSON body (default), the query string, or a `{name}` placeholder of the URL path.
// The reserved parameters (schemas/tools.ts RESERVED_PARAMETER_NAMES) are injected into every call's body.
import { GuardedFetchError } from '../../net/guarded-fetch.js';
import { jsonProblem, toSafeText } from '../../schemas/safe-json.js';
import type { ToolDefinition, ParameterLocation } from '../../schemas/tools.js';
import type { NewToolCall } from '../../store/conversations.js';
import type { ConversationTimers } from '../host.js';
import { endpointTimeoutMs } from './catalog.js';

export interface ReservedParameters {
  conversation_id: string;
  call_info: unknown;
  from_phone_number: string | null;
  to_phone_number: string | null;
  telephony_call_sid: string | null;
  pre_tool_text: string;
}

function locationOf(def: ToolDefinition, name: string): ParameterLocation {
  const fromMap = def.parameter_locations?.[name];
  if (fromMap) return fromMap;
  if (Array.isArray(def.parameters)) {
    const p = def.parameters.find((x) => x.name === name);
    if (p?.location) return p.location;
  }
  return 'request_body';
}

/** The request as it will be made (pure): URL with path placeholders filled and query added, body, headers. */
export function webhookRequest(def: ToolDefinition, args: Record<string, unknown>, reserved: ReservedParameters) {
  const method = def.endpoint_method ?? 'POST';
  let url = def.endpoint_url ?? '';
  const query: Record<string, string> = {};
  const body: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(args)) {
    const where = locationOf(def, name);
    const text = typeof value === 'string' ? value : JSON.stringify(value);
    if (where === 'url_path') url = url.split(`{${name}}`).join(encodeURIComponent(text));
    else if (where === 'query_string') query[name] = text;
    else body[name] = value;
  }
  Object.assign(body, reserved);
  const u = new URL(url);
  for (const [k, v] of Object.entries(query)) u.searchParams.set(k, v);
  return { method, url: u.toString(), query, body, headers: def.endpoint_headers ?? {} };
}

/**
 * Calls the endpoint; the outcome is the record's tool call entry (never throws). `deps.fetch` is the guarded client
 * (src/net/guarded-fetch.ts) in a media worker: a refused address or redirect is recorded as its error message, and
 * nothing of what such an endpoint would have answered. The answer is kept as the database can store it: JSON with
 * NUL, unpaired surrogates or too deep a nesting is kept as text, NUL replaced.
 */
export async function callWebhook(
  tool: { id: string; name: string; definition: ToolDefinition },
  args: Record<string, unknown>,
  reserved: ReservedParameters,
  deps: { fetch: typeof fetch; timers: ConversationTimers },
): Promise<{ entry: NewToolCall; output: string }> {
  const def = tool.definition;
  const timeoutMs = endpointTimeoutMs(def);
  const base: NewToolCall = {
    tool: { id: tool.id, name: tool.name },
    request_body: args,
    response_body: null,
    timed_out: false,
    error_message: null,
    endpoint_method: def.endpoint_method ?? 'POST',
    endpoint_url: def.endpoint_url ?? null,
    endpoint_headers: def.endpoint_headers ?? {},
    endpoint_timeout_ms: timeoutMs,
    endpoint_called_at: null,
    query_params: null,
    response_status_code: null,
  };
  let req: ReturnType<typeof webhookRequest>;
  try {
    req = webhookRequest(def, args, reserved);
  } catch (err) {
    const message = `cannot build the request: ${(err as Error).message}`;
    return { entry: { ...base, error_message: message }, output: JSON.stringify({ error: message }) };
  }
  const entry: NewToolCall = {
    ...base,
    endpoint_url: req.url,
    query_params: Object.keys(req.query).length ? req.query : null,
    endpoint_called_at: new Date(deps.timers.now()).toISOString(),
  };
  const abort = new AbortController();
  let timedOut = false;
  const handle = deps.timers.set(() => {
    timedOut = true;
    abort.abort();
  }, timeoutMs);
  try {
    const res = await deps.fetch(req.url, {
      method: req.method,
      headers: { 'content-type': 'application/json', ...req.headers },
      body: req.method === 'GET' ? undefined : JSON.stringify(req.body),
      signal: abort.signal,
    });
    const text = toSafeText(await res.text());
    entry.response_status_code = res.status;
    let parsed: unknown = text;
    try {
      parsed = JSON.parse(text);
    } catch {
      /* a non-JSON body is kept as text under `text` */
    }
    if (jsonProblem(parsed)) parsed = text;
    entry.response_body =
      parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed)
        ? (parsed as Record<string, unknown>)
        : { text: parsed };
    if (!res.ok) entry.error_message = `HTTP ${res.status}`;
    return { entry, output: text };
  } catch (err) {
    if (timedOut) {
      entry.timed_out = true;
      entry.error_message = `no response within ${timeoutMs} ms`;
    } else if (err instanceof GuardedFetchError && err.kind === 'timeout') {
      entry.timed_out = true;
      entry.error_message = err.message;
    } else {
      // A GuardedFetchError's message says what was refused ("endpoint address is not allowed: 127.0.0.1").
      entry.error_message = (err as Error).message;
    }
    return { entry, output: JSON.stringify({ error: entry.error_message }) };
  } finally {
    deps.timers.clear(handle);
  }
}
