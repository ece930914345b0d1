// The configuration endpoint: at the start of the conversation, a POST with its context to the agent's
// `configuration_endpoint.url` (its headers, within `timeout_ms`), answered by a JSON object of overrides. Each
// failure ends the conversation with its own `ended_by`: configuration_endpoint_timed_out (no answer in time),
// configuration_endpoint_error (unreachable, or not a 2xx), configuration_endpoint_invalid_response (not a JSON
// object of valid overrides).
import type { EndedBy } from '../schemas/conversations.js';
import type { UrlRules } from '../schemas/common.js';
import type { ConversationTimers } from './host.js';
import { overridesSchema, type Overrides } from './settings.js';

export interface ConfigurationEndpointCall {
  url: string;
  headers?: Record<string, string>;
  timeout_ms: number;
}

export type ConfigurationOutcome =
  | { ok: true; overrides: Overrides }
  | { ok: false; endedBy: Extract<EndedBy, `configuration_endpoint_${string}`>; message: string };

export async function callConfigurationEndpoint(
  endpoint: ConfigurationEndpointCall,
  context: Record<string, unknown>,
  deps: { fetch: typeof fetch; timers: ConversationTimers; rules: UrlRules },
): Promise<ConfigurationOutcome> {
  const abort = new AbortController();
  let timedOut = false;
  const handle = deps.timers.set(() => {
    timedOut = true;
    abort.abort();
  }, endpoint.timeout_ms);
  try {
    let res: Response;
    let text: string;
    try {
      res = await deps.fetch(endpoint.url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...endpoint.headers },
        body: JSON.stringify(context),
        signal: abort.signal,
      });
      text = await res.text();
    } catch (err) {
      if (timedOut) return { ok: false, endedBy: 'configuration_endpoint_timed_out', message: `no answer within ${endpoint.timeout_ms} ms` };
      return { ok: false, endedBy: 'configuration_endpoint_error', message: (err as Error).message };
    }
    if (timedOut) return { ok: false, endedBy: 'configuration_endpoint_timed_out', message: `no answer within ${endpoint.timeout_ms} ms` };
    if (!res.ok) return { ok: false, endedBy: 'configuration_endpoint_error', message: `HTTP ${res.status}` };
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      return { ok: false, endedBy: 'configuration_endpoint_invalid_response', message: 'the response is not JSON' };
    }
    if (typeof body !== 'object' || body === null || Array.isArray(body)) {
      return { ok: false, endedBy: 'configuration_endpoint_invalid_response', message: 'the response is not a JSON object' };
    }
    const parsed = overridesSchema(deps.rules).safeParse(body);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      return { ok: false, endedBy: 'configuration_endpoint_invalid_response', message: `${issue.path.join('.')}: ${issue.message}` };
    }
    return { ok: true, overrides: parsed.data };
  } finally {
    deps.timers.clear(handle);
  }
}
