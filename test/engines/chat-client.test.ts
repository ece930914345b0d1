import t from 'tap';
import {
  backoffDelay,
  ChatUpstreamInvalidError,
  ChatUpstreamUnavailableError,
  createChatClient,
  parseRetryAfter,
} from '../../src/engines/chat-client.js';
import { startFakeChatServer, type FakeChatServer } from '../fakes/chat-server.js';

let fake: FakeChatServer;
t.before(async () => {
  fake = await startFakeChatServer();
});
t.teardown(() => fake.close());
t.beforeEach(() => {
  fake.requests.length = 0;
});

/** A client whose sleeps are recorded instead of waited. */
function client(opts: { maxRetries?: number; timeoutMs?: number; random?: () => number; apiKey?: string } = {}) {
  const sleeps: number[] = [];
  const c = createChatClient({
    baseUrl: fake.baseUrl,
    model: 'test-model',
    apiKey: opts.apiKey,
    maxRetries: opts.maxRetries ?? 2,
    timeoutMs: opts.timeoutMs ?? 5000,
    baseDelayMs: 100,
    maxDelayMs: 1000,
    random: opts.random ?? (() => 0.5),
    now: () => Date.parse('2026-11-22T12:00:00Z'),
    sleep: async (ms) => void sleeps.push(ms),
  });
  return { c, sleeps };
}

t.test('sends model, messages, tools and the API key; reads text and tool calls', async (t) => {
  fake.script({
    reply: { content: 'Let me check.', toolCalls: [{ id: 'call_1', name: 'lookup', arguments: { id: 7 } }] },
  });
  const { c } = client({ apiKey: 'sk-test' });
  const out = await c.complete({
    messages: [
      { role: 'system', content: 'be brief' },
      { role: 'user', content: 'hi' },
    ],
    tools: [
      {
        type: 'function',
        function: { name: 'lookup', description: 'd', parameters: { type: 'object', properties: {} } },
      },
    ],
  });
  t.equal(out.content, 'Let me check.');
  t.same(out.toolCalls, [{ id: 'call_1', type: 'function', function: { name: 'lookup', arguments: '{"id":7}' } }]);
  t.equal(out.finishReason, 'tool_calls');
  t.equal(fake.requests.length, 1);
  const req = fake.requests[0]!;
  t.equal(req.path, '/v1/chat/completions');
  t.equal(req.headers.authorization, 'Bearer sk-test');
  t.equal(req.body.model, 'test-model');
  t.equal(req.body.messages.length, 2);
  t.equal(req.body.tools?.[0]?.function.name, 'lookup');
  t.equal(req.body.tool_choice, 'auto');
  t.equal(req.body.stream, false);
});

t.test('without tools no tools or tool_choice are sent; a null content reads as empty text', async (t) => {
  fake.script({ reply: { content: null } });
  const { c } = client();
  const out = await c.complete({ messages: [{ role: 'user', content: 'hi' }] });
  t.equal(out.content, '');
  t.same(out.toolCalls, []);
  t.notOk('tools' in fake.requests[0]!.body);
  t.notOk('tool_choice' in fake.requests[0]!.body);
  t.notOk('authorization' in fake.requests[0]!.headers);
});

t.test('sends temperature, max_tokens and response_format; reads usage', async (t) => {
  fake.script(
    { reply: { content: '{"name":"Ada"}' } },
    { raw: JSON.stringify({ choices: [{ message: { content: 'x' } }], usage: 'weird' }) },
  );
  const { c } = client();
  const format = {
    type: 'json_schema',
    json_schema: { name: 'person', schema: { type: 'object' }, strict: true },
  } as const;
  const out = await c.complete({
    messages: [{ role: 'user', content: 'who?' }],
    temperature: 0,
    maxTokens: 50,
    responseFormat: format,
  });
  t.equal(out.content, '{"name":"Ada"}');
  t.same(out.usage, { promptTokens: 12, completionTokens: 5 });
  t.match(fake.requests[0]!.body, { temperature: 0, max_tokens: 50, response_format: format });
  const odd = await c.complete({ messages: [{ role: 'user', content: 'x' }] });
  t.equal(odd.usage, null, 'an unreadable usage is no usage, not an invalid answer');
  t.equal(odd.finishReason, null);
});

t.test('retries 5xx and 429 with exponential backoff, then succeeds', async (t) => {
  fake.script({ status: 500 }, { status: 429 }, { reply: { content: 'ok' } });
  const { c, sleeps } = client({ maxRetries: 3, random: () => 0.5 });
  const out = await c.complete({ messages: [{ role: 'user', content: 'hi' }] });
  t.equal(out.content, 'ok');
  t.equal(fake.requests.length, 3);
  // full jitter at random 0.5: half of 100 * 2^0, then half of 100 * 2^1
  t.same(sleeps, [50, 100]);
});

t.test('honours Retry-After in seconds and as an HTTP date', async (t) => {
  fake.script(
    { status: 429, headers: { 'retry-after': '3' } },
    { status: 503, headers: { 'retry-after': 'Sun, 22 Nov 2026 12:00:02 GMT' } },
    { reply: { content: 'ok' } },
  );
  const { c, sleeps } = client({ maxRetries: 2, random: () => 0 });
  await c.complete({ messages: [{ role: 'user', content: 'hi' }] });
  t.same(sleeps, [3000, 2000]);
});

t.test('a Retry-After beyond the cap fails at once as unavailable', async (t) => {
  fake.script({ status: 429, headers: { 'retry-after': '3600' } });
  const { c, sleeps } = client();
  await t.rejects(c.complete({ messages: [{ role: 'user', content: 'hi' }] }), ChatUpstreamUnavailableError);
  t.same(sleeps, []);
  t.equal(fake.requests.length, 1);
});

t.test('gives up after the retries as unavailable (503)', async (t) => {
  fake.script({ status: 502 }, { status: 502 }, { status: 502 });
  const { c, sleeps } = client({ maxRetries: 2 });
  const err = await c.complete({ messages: [{ role: 'user', content: 'hi' }] }).catch((e) => e);
  t.ok(err instanceof ChatUpstreamUnavailableError);
  t.equal(err.status, 503);
  t.match(err.message, /3 attempts.*HTTP 502/);
  t.equal(fake.requests.length, 3);
  t.equal(sleeps.length, 2);
});

t.test('a request that gets no answer times out and counts as unavailable', async (t) => {
  fake.script({ hang: true }, { hang: true });
  const { c } = client({ maxRetries: 1, timeoutMs: 200 });
  const err = await c.complete({ messages: [{ role: 'user', content: 'hi' }] }).catch((e) => e);
  t.ok(err instanceof ChatUpstreamUnavailableError);
  t.match(err.message, /no answer within 200 ms/);
  t.equal(fake.requests.length, 2);
});

t.test('a dropped connection is retried', async (t) => {
  fake.script({ destroy: true }, { reply: { content: 'back' } });
  const { c } = client({ maxRetries: 1 });
  const out = await c.complete({ messages: [{ role: 'user', content: 'hi' }] });
  t.equal(out.content, 'back');
});

t.test('an unreachable server is unavailable', async (t) => {
  const c = createChatClient({ baseUrl: 'http://127.0.0.1:1/v1', model: 'm', maxRetries: 0 });
  const err = await c.complete({ messages: [{ role: 'user', content: 'hi' }] }).catch((e) => e);
  t.ok(err instanceof ChatUpstreamUnavailableError);
  t.match(err.message, /unreachable/);
});

t.test('malformed output is invalid (502) and not retried', async (t) => {
  fake.script(
    { raw: 'this is not json' },
    { raw: JSON.stringify({ choices: [] }) },
    { raw: JSON.stringify({ foo: 1 }) },
  );
  const { c } = client();
  for (const pattern of [/other than JSON/, /not a chat completion/, /not a chat completion/]) {
    const err = await c.complete({ messages: [{ role: 'user', content: 'hi' }] }).catch((e) => e);
    t.ok(err instanceof ChatUpstreamInvalidError);
    t.equal(err.status, 502);
    t.match(err.message, pattern);
  }
  t.equal(fake.requests.length, 3);
});

t.test('a 4xx other than 429 is invalid and not retried', async (t) => {
  fake.script({ status: 400, body: { error: { message: 'bad model' } } });
  const { c, sleeps } = client();
  const err = await c.complete({ messages: [{ role: 'user', content: 'hi' }] }).catch((e) => e);
  t.ok(err instanceof ChatUpstreamInvalidError);
  t.match(err.message, /HTTP 400.*bad model/);
  t.same(sleeps, []);
});

t.test('the caller can cancel', async (t) => {
  fake.script({ hang: true });
  const { c } = client();
  const ac = new AbortController();
  const p = c.complete({ messages: [{ role: 'user', content: 'hi' }], signal: ac.signal });
  setTimeout(() => ac.abort(new Error('cancelled by caller')), 50);
  await t.rejects(p, /cancelled by caller/);
});

t.test('backoff and Retry-After arithmetic', async (t) => {
  t.equal(
    backoffDelay(0, 100, 1000, () => 0.999),
    99,
  );
  t.equal(
    backoffDelay(3, 100, 1000, () => 0.5),
    400,
  );
  t.equal(
    backoffDelay(10, 100, 1000, () => 0.5),
    500,
    'capped by the maximum',
  );
  t.equal(parseRetryAfter('7', 0), 7000);
  t.equal(parseRetryAfter(null, 0), null);
  t.equal(parseRetryAfter('soon', 0), null);
  t.equal(parseRetryAfter('Thu, 01 Jan 1970 00:00:05 GMT', 1000), 4000);
});
