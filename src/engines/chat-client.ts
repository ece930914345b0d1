// The one client of an OpenAI-compatible chat-completions API (`POST {base}/chat/completions`) with function
// calling. Used by POST /v1/responses, the cascade engine and post-call extraction. Not streaming.
//
// Failure model, one error type per outcome the caller maps:
// - ChatUpstreamUnavailableError (HTTP 503 at our API): unreachable, timed out, or 429/5xx after every retry.
// - ChatUpstreamInvalidError (HTTP 502 at our API): it answered, but not with a usable completion.
import { z } from 'zod';
import type { Logger } from '../log.js';

// RFC 9110 15.5.20 / 15.6: 429 and 5xx are worth another attempt; any other status will not change.
const RETRYABLE_STATUS = new Set([429, 500, 502, 503, 504]);
const DEFAULT_TIMEOUT_MS = 30_000;
const DEFAULT_MAX_RETRIES = 2;
const DEFAULT_BASE_DELAY_MS = 250;
const DEFAULT_MAX_DELAY_MS = 8_000;
/** A Retry-After longer than this is not waited for: the request fails as unavailable at once. */
const DEFAULT_MAX_RETRY_AFTER_MS = 30_000;
/** Bytes of an upstream error body kept in an error message. */
const ERROR_BODY_EXCERPT = 300;

export type ChatRole = 'system' | 'user' | 'assistant' | 'tool';

export interface ChatToolCall {
  id: string;
  type: 'function';
  function: { name: string; arguments: string };
}

export type ChatMessage =
  | { role: 'system'; content: string }
  | { role: 'user'; content: string }
  | { role: 'assistant'; content: string | null; tool_calls?: ChatToolCall[] }
  | { role: 'tool'; tool_call_id: string; content: string };

export interface ChatFunctionTool {
  type: 'function';
  function: { name: string; description: string; parameters: Record<string, unknown> };
}

export type ChatToolChoice = 'auto' | 'none' | 'required';

/** OpenAI `response_format`: free text, any JSON object, or JSON valid against a schema (structured outputs). */
export type ChatResponseFormat =
  | { type: 'text' }
  | { type: 'json_object' }
  | { type: 'json_schema'; json_schema: { name: string; schema: Record<string, unknown>; strict?: boolean } };

export interface ChatRequest {
  messages: ChatMessage[];
  tools?: ChatFunctionTool[];
  toolChoice?: ChatToolChoice;
  temperature?: number;
  maxTokens?: number;
  /** For structured output (post-call extraction); servers without support answer 400 (ChatUpstreamInvalidError). */
  responseFormat?: ChatResponseFormat;
  /** Cancels the whole request, retries included. */
  signal?: AbortSignal;
}

export interface ChatCompletion {
  /** Text of the reply; '' when the model only called functions. */
  content: string;
  toolCalls: ChatToolCall[];
  finishReason: string | null;
  model: string | null;
  /** Token counts when the server reports them. */
  usage: { promptTokens: number; completionTokens: number } | null;
}

export class ChatUpstreamUnavailableError extends Error {
  readonly status = 503;
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'ChatUpstreamUnavailableError';
  }
}

export class ChatUpstreamInvalidError extends Error {
  readonly status = 502;
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'ChatUpstreamInvalidError';
  }
}

export interface ChatClientOptions {
  /** Base URL of the API, e.g. `http://127.0.0.1:8080/v1`; `/chat/completions` is appended. */
  baseUrl: string;
  model: string;
  apiKey?: string;
  /** Per attempt. */
  timeoutMs?: number;
  maxRetries?: number;
  baseDelayMs?: number;
  maxDelayMs?: number;
  maxRetryAfterMs?: number;
  /** Injected for tests: waits `ms` (rejecting when `signal` aborts). */
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
  /** Injected for tests: uniform in [0, 1). */
  random?: () => number;
  /** Injected for tests: the current time in ms since the epoch (for HTTP-date Retry-After). */
  now?: () => number;
  /** The HTTP client (default: the global fetch); post-call jobs pass theirs (JobContext.fetch). */
  fetch?: typeof fetch;
  log?: Logger;
}

export interface ChatClient {
  readonly model: string;
  complete(request: ChatRequest): Promise<ChatCompletion>;
}

const toolCallSchema = z.object({
  id: z.string().min(1).optional(),
  type: z.literal('function').optional(),
  function: z.object({ name: z.string().min(1), arguments: z.string().optional() }),
});

const completionSchema = z.object({
  model: z.string().optional(),
  usage: z.object({ prompt_tokens: z.number(), completion_tokens: z.number() }).nullish().catch(null),
  choices: z
    .array(
      z.object({
        finish_reason: z.string().nullish(),
        message: z.object({
          role: z.string().optional(),
          content: z.string().nullish(),
          tool_calls: z.array(toolCallSchema).nullish(),
        }),
      }),
    )
    .min(1),
});

export function defaultSleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/** RFC 9110 10.2.3: Retry-After is delay-seconds or an HTTP-date. Returns ms, or null when absent/unreadable. */
export function parseRetryAfter(value: string | null, nowMs: number): number | null {
  if (value === null) return null;
  const trimmed = value.trim();
  if (/^\d+$/.test(trimmed)) return Number(trimmed) * 1000;
  const date = Date.parse(trimmed);
  if (Number.isNaN(date)) return null;
  return Math.max(0, date - nowMs);
}

/** Exponential backoff with full jitter: uniform in [0, min(max, base * 2^attempt)). */
export function backoffDelay(attempt: number, baseMs: number, maxMs: number, random: () => number): number {
  return Math.floor(random() * Math.min(maxMs, baseMs * 2 ** attempt));
}

type Attempt =
  { kind: 'ok'; completion: ChatCompletion } | { kind: 'retry'; reason: string; retryAfterMs: number | null };

export function createChatClient(options: ChatClientOptions): ChatClient {
  const url = `${options.baseUrl.replace(/\/+$/, '')}/chat/completions`;
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const maxRetries = options.maxRetries ?? DEFAULT_MAX_RETRIES;
  const baseDelayMs = options.baseDelayMs ?? DEFAULT_BASE_DELAY_MS;
  const maxDelayMs = options.maxDelayMs ?? DEFAULT_MAX_DELAY_MS;
  const maxRetryAfterMs = options.maxRetryAfterMs ?? DEFAULT_MAX_RETRY_AFTER_MS;
  const sleep = options.sleep ?? defaultSleep;
  const random = options.random ?? Math.random;
  const now = options.now ?? Date.now;
  const doFetch = options.fetch ?? fetch;
  const headers: Record<string, string> = { 'content-type': 'application/json', accept: 'application/json' };
  if (options.apiKey) headers.authorization = `Bearer ${options.apiKey}`;

  function body(request: ChatRequest): string {
    const payload: Record<string, unknown> = { model: options.model, messages: request.messages, stream: false };
    if (request.tools && request.tools.length > 0) {
      payload.tools = request.tools;
      payload.tool_choice = request.toolChoice ?? 'auto';
    }
    if (request.temperature !== undefined) payload.temperature = request.temperature;
    if (request.maxTokens !== undefined) payload.max_tokens = request.maxTokens;
    if (request.responseFormat !== undefined) payload.response_format = request.responseFormat;
    return JSON.stringify(payload);
  }

  async function attempt(payload: string, signal: AbortSignal | undefined): Promise<Attempt> {
    const timeout = AbortSignal.timeout(timeoutMs);
    const combined = signal ? AbortSignal.any([signal, timeout]) : timeout;
    let response: Response;
    let text: string;
    try {
      response = await doFetch(url, { method: 'POST', headers, body: payload, signal: combined });
      text = await response.text();
    } catch (err) {
      if (signal?.aborted) throw err;
      const reason = timeout.aborted ? `no answer within ${timeoutMs} ms` : `unreachable: ${(err as Error).message}`;
      return { kind: 'retry', reason, retryAfterMs: null };
    }
    if (RETRYABLE_STATUS.has(response.status)) {
      return {
        kind: 'retry',
        reason: `HTTP ${response.status}: ${text.slice(0, ERROR_BODY_EXCERPT)}`,
        retryAfterMs: parseRetryAfter(response.headers.get('retry-after'), now()),
      };
    }
    if (!response.ok) {
      throw new ChatUpstreamInvalidError(
        `chat model rejected the request with HTTP ${response.status}: ${text.slice(0, ERROR_BODY_EXCERPT)}`,
      );
    }
    return { kind: 'ok', completion: parseCompletion(text) };
  }

  async function complete(request: ChatRequest): Promise<ChatCompletion> {
    const payload = body(request);
    for (let retry = 0; ; retry++) {
      const result = await attempt(payload, request.signal);
      if (result.kind === 'ok') return result.completion;
      if (retry >= maxRetries) {
        throw new ChatUpstreamUnavailableError(`chat model unavailable after ${retry + 1} attempts: ${result.reason}`);
      }
      if (result.retryAfterMs !== null && result.retryAfterMs > maxRetryAfterMs) {
        throw new ChatUpstreamUnavailableError(
          `chat model asked to retry after ${Math.ceil(result.retryAfterMs / 1000)} s: ${result.reason}`,
        );
      }
      const delay = Math.max(result.retryAfterMs ?? 0, backoffDelay(retry, baseDelayMs, maxDelayMs, random));
      options.log?.warn({ retry: retry + 1, delayMs: delay, reason: result.reason }, 'chat model request retried');
      await sleep(delay, request.signal);
    }
  }

  return { model: options.model, complete };
}

/** Reads a completion body; anything else is ChatUpstreamInvalidError. */
export function parseCompletion(text: string): ChatCompletion {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    throw new ChatUpstreamInvalidError(
      `chat model answered with something other than JSON: ${text.slice(0, ERROR_BODY_EXCERPT)}`,
      {
        cause: err,
      },
    );
  }
  const parsed = completionSchema.safeParse(json);
  if (!parsed.success) {
    throw new ChatUpstreamInvalidError(
      `chat model answer is not a chat completion: ${parsed.error.issues[0]?.message ?? ''}`,
    );
  }
  const choice = parsed.data.choices[0];
  const toolCalls: ChatToolCall[] = (choice.message.tool_calls ?? []).map((call, index) => ({
    id: call.id ?? `call_${index}`,
    type: 'function',
    function: { name: call.function.name, arguments: call.function.arguments ?? '{}' },
  }));
  return {
    content: choice.message.content ?? '',
    toolCalls,
    finishReason: choice.finish_reason ?? null,
    model: parsed.data.model ?? null,
    usage: parsed.data.usage
      ? { promptTokens: parsed.data.usage.prompt_tokens, completionTokens: parsed.data.usage.completion_tokens }
      : null,
  };
}

/**
 * The configured chat model of a node, or null when PARLEY_LLM_BASE_URL / PARLEY_LLM_MODEL are not both set; its
 * requests go through `fetchImpl` (default: the global fetch).
 */
export function chatClientFromSettings(
  settings: {
    PARLEY_LLM_BASE_URL?: string | undefined;
    PARLEY_LLM_MODEL?: string | undefined;
    PARLEY_LLM_API_KEY?: string | undefined;
    PARLEY_LLM_TIMEOUT_MS: number;
    PARLEY_LLM_MAX_RETRIES: number;
  },
  log?: Logger,
  fetchImpl?: typeof fetch,
): ChatClient | null {
  if (!settings.PARLEY_LLM_BASE_URL || !settings.PARLEY_LLM_MODEL) return null;
  return createChatClient({
    baseUrl: settings.PARLEY_LLM_BASE_URL,
    model: settings.PARLEY_LLM_MODEL,
    apiKey: settings.PARLEY_LLM_API_KEY,
    timeoutMs: settings.PARLEY_LLM_TIMEOUT_MS,
    maxRetries: settings.PARLEY_LLM_MAX_RETRIES,
    fetch: fetchImpl,
    log,
  });
}
