// A fake OpenAI-compatible chat-completions server for tests: answers `POST /v1/chat/completions` from a
// script of steps (one per request, in order; the last `fallback` when the script runs out) and records every
// request it got. Listens on 127.0.0.1, port 0.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface FakeToolCall {
  name: string;
  /** An object is JSON-encoded; a string is sent as is (to send malformed arguments). */
  arguments: Record<string, unknown> | string;
  id?: string;
}

/** What the fake does with one request. */
export type ChatStep =
  /** A well-formed completion. */
  | { reply: { content?: string | null; toolCalls?: FakeToolCall[] } }
  /** Any status with a JSON or text body and headers (errors, 429 with Retry-After, ...). */
  | { status: number; body?: unknown; headers?: Record<string, string> }
  /** A 200 with this exact body (malformed output). */
  | { raw: string }
  /** Never answers (until the client gives up or the server closes). */
  | { hang: true }
  /** Closes the connection without an answer. */
  | { destroy: true }
  /** Decides from the request body. */
  | ((request: RecordedChatRequest) => ChatStep);

export interface RecordedChatRequest {
  path: string;
  headers: IncomingMessage['headers'];
  body: {
    model?: string;
    messages: { role: string; content?: string | null; tool_calls?: unknown[]; tool_call_id?: string }[];
    tools?: { type: string; function: { name: string; description?: string; parameters?: unknown } }[];
    tool_choice?: unknown;
    [key: string]: unknown;
  };
}

export interface FakeChatServer {
  /** Base URL to configure as PARLEY_LLM_BASE_URL (ends with /v1). */
  baseUrl: string;
  requests: RecordedChatRequest[];
  /** Appends steps to the script. */
  script(...steps: ChatStep[]): void;
  /** The step used when the script is empty (default: a reply "Hello."). */
  fallback: ChatStep;
  /** Requests on `hang` whose client gave up (closed the connection) before any answer. */
  abandoned: number;
  /** Resolves once `n` requests were received in all. */
  waitForRequests(n: number): Promise<void>;
  close(): Promise<void>;
}

export function completionBody(content: string | null, toolCalls: FakeToolCall[] = [], model = 'fake-model'): unknown {
  return {
    id: 'chatcmpl-fake',
    object: 'chat.completion',
    model,
    usage: { prompt_tokens: 12, completion_tokens: 5, total_tokens: 17 },
    choices: [
      {
        index: 0,
        finish_reason: toolCalls.length > 0 ? 'tool_calls' : 'stop',
        message: {
          role: 'assistant',
          content,
          ...(toolCalls.length > 0
            ? {
                tool_calls: toolCalls.map((call, i) => ({
                  id: call.id ?? `call_fake_${i}_${Math.random().toString(36).slice(2, 8)}`,
                  type: 'function',
                  function: {
                    name: call.name,
                    arguments: typeof call.arguments === 'string' ? call.arguments : JSON.stringify(call.arguments),
                  },
                })),
              }
            : {}),
        },
      },
    ],
  };
}

export async function startFakeChatServer(): Promise<FakeChatServer> {
  const queue: ChatStep[] = [];
  const requests: RecordedChatRequest[] = [];
  const hanging = new Set<ServerResponse>();
  const waiters: { n: number; resolve: () => void }[] = [];
  let closing = false;
  const fake: FakeChatServer = {
    baseUrl: '',
    requests,
    script: (...steps) => void queue.push(...steps),
    fallback: { reply: { content: 'Hello.' } },
    abandoned: 0,
    waitForRequests: (n) =>
      requests.length >= n ? Promise.resolve() : new Promise<void>((resolve) => waiters.push({ n, resolve })),
    close: async () => {
      closing = true;
      for (const res of hanging) res.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };

  function perform(step: ChatStep, recorded: RecordedChatRequest, res: ServerResponse): void {
    if (typeof step === 'function') return perform(step(recorded), recorded, res);
    if ('reply' in step) {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(completionBody(step.reply.content ?? null, step.reply.toolCalls)));
    } else if ('status' in step) {
      const text =
        typeof step.body === 'string' ? step.body : JSON.stringify(step.body ?? { error: { message: 'fake error' } });
      res.writeHead(step.status, { 'content-type': 'application/json', ...step.headers });
      res.end(text);
    } else if ('raw' in step) {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(step.raw);
    } else if ('hang' in step) {
      hanging.add(res);
      res.on('close', () => {
        if (!closing) fake.abandoned++;
        hanging.delete(res);
      });
    } else {
      res.socket?.destroy();
    }
  }

  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (req.method !== 'POST' || !req.url?.endsWith('/chat/completions')) {
        res.writeHead(404, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: { message: `no route ${req.method} ${req.url}` } }));
        return;
      }
      let body: RecordedChatRequest['body'];
      try {
        body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      } catch {
        res.writeHead(400, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: { message: 'body is not JSON' } }));
        return;
      }
      const recorded: RecordedChatRequest = { path: req.url, headers: req.headers, body };
      requests.push(recorded);
      for (const w of waiters.filter((w) => requests.length >= w.n)) {
        waiters.splice(waiters.indexOf(w), 1);
        w.resolve();
      }
      perform(queue.shift() ?? fake.fallback, recorded, res);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  fake.baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
  return fake;
}
