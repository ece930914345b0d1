// The configuration endpoint: at the start of the conversation, a POST with its context to the agent's
// `configuration_endpoint.url` (its headers, within `timeout_ms`), answered by a JSON object of overrides. Each
// failure ends the conversation with its own `ended_by`: configuration_endpoint_timed_out (no answer in time),
// configuration_endpoint_error (unreachable, or not a 2xx), configuration_endpoint_invalid_response (not a JSON
// object of valid overrides).
import { GuardedFetchError } from '../net/guarded-fetch.js';
import type { EndedBy } from '../schemas/conversations.js';
import { jsonProblem } from '../schemas/safe-json.js';
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
      // The guarded client's refusals (an address or redirect not allowed, too large an answer) are endpoint
      // errors with their own message; its deadline is a timeout like ours.
      if (timedOut)
        return {
          ok: false,
          endedBy: 'configuration_endpoint_timed_out',
          message: `no answer within ${endpoint.timeout_ms} ms`,
        };
      if (err instanceof GuardedFetchError && err.kind === 'timeout')
        return { ok: false, endedBy: 'configuration_endpoint_timed_out', message: err.message };
      return { ok: false, endedBy: 'configuration_endpoint_error', message: (err as Error).message };
    }
    if (timedOut)
      return {
        ok: false,
        endedBy: 'configuration_endpoint_timed_out',
        message: `no answer within ${endpoint.timeout_ms} ms`,
      };
    if (!res.ok) return { ok: false, endedBy: 'configuration_endpoint_error', message: `HTTP ${res.status}` };
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      return { ok: false, endedBy: 'configuration_endpoint_invalid_response', message: 'the response is not JSON' };
    }
    if (typeof body !== 'object' || body === null || Array.isArray(body)) {
      return {
        ok: false,
        endedBy: 'configuration_endpoint_invalid_response',
        message: 'the response is not a JSON object',
      };
    }
    // Text the record could not store (NUL, unpaired surrogates) is refused like any invalid override.
    const unsafe = jsonProblem(body);
    if (unsafe)
      return {
        ok: false,
        endedBy: 'configuration_endpoint_invalid_response',
        message: `${unsafe.path.join('.') || 'body'}: ${unsafe.message}`,
      };
    const parsed = overridesSchema(deps.rules).safeParse(body);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      return {
        ok: false,
        endedBy: 'configuration_endpoint_invalid_response',
        message: `${issue.path.join('.')}: ${issue.message}`,
      };
    }
    return { ok: true, overrides: parsed.data };
  } finally {
    deps.timers.clear(handle);
  }
}
