// The guarded client as a conversation uses it (the media worker passes it as ConversationDeps.fetch): a webhook
// tool whose public endpoint 302-redirects to 127.0.0.1, or whose host resolves to it, records the refusal and
// nothing of the internal service; a configuration endpoint doing the same ends the conversation with
// configuration_endpoint_error. And what endpoints answer is kept as the record can store it: a webhook's NUL or
// unpaired surrogate is replaced, a configuration endpoint's is an invalid response naming the field.
import t from 'tap';
import { createGuardedFetch } from '../../src/net/guarded-fetch.js';
import { config, setup, tickUntil, type Setup } from '../conversation/harness.js';
import { until } from '../helpers/wait.js';
import { FAKE_PUBLIC, INTERNAL, listen, policy, resolver } from './peers.js';

t.setTimeout(120_000);

/** The client a worker builds without PARLEY_ALLOW_PRIVATE_ENDPOINTS, on the tests' resolver and fake internet. */
const guarded = (table: Record<string, string[]>) =>
  createGuardedFetch({ allowPrivate: false, isAllowedAddress: policy, resolve: resolver(table) });

const webhookTool = (name: string, url: string) => ({
  id: `tool_${name}`,
  name,
  definition: {
    type: 'custom_webhook',
    name,
    description: 'd',
    execution_mode: 'sync',
    parameters: [],
    endpoint_method: 'POST',
    endpoint_url: url,
    endpoint_timeout_ms: 5000,
  },
});

/** Starts a conversation whose first reply calls the tool `name`, and waits for the call's entry in the record. */
async function callTool(s: Setup, name: string) {
  await s.conv.start({
    kind: 'config',
    config: config({
      tools: [name],
      scripted_engine: { responses: [{ say: 'One moment.', tool_calls: [{ name, arguments: {} }] }] },
    }),
  });
  s.conv.handle({ type: 'generate_reply' });
  await tickUntil(s, () => s.client.count('assistant_finished_speaking') === 1, 'reply played');
  const calls = () => s.store.only().items.flatMap((i) => i.tool_calls ?? []);
  await until(() => calls().length === 1, { what: 'the tool call recorded' });
  await s.conv.end('user');
  return calls()[0];
}

t.test(
  'webhook: a public endpoint redirecting to 127.0.0.1 is not followed; the call records the refusal',
  async (t) => {
    const internal = await listen(t, INTERNAL, (_req, res) => res.end('{"secret":"internal-service-answer"}'));
    const pub = await listen(t, FAKE_PUBLIC, (_req, res) => {
      res.writeHead(302, { location: `http://127.0.0.1:${internal.port}/latest/meta-data` });
      res.end();
    });
    const s = setup({ fetch: guarded({ 'hooks.example.com': [FAKE_PUBLIC] }) });
    s.store.tools.set('lookup', webhookTool('lookup', `http://hooks.example.com:${pub.port}/hook`));
    const call = await callTool(s, 'lookup');
    t.equal(pub.seen.length, 1, 'the public endpoint was called');
    t.equal(internal.seen.length, 0, 'the internal service was not');
    t.equal(call.error_message, 'endpoint address is not allowed: 127.0.0.1');
    t.equal(call.response_body, null);
    t.equal(call.response_status_code, null);
    t.notMatch(JSON.stringify(s.store.only()), /internal-service-answer/);
  },
);

t.test('webhook: a host that resolves to 127.0.0.1 is not called', async (t) => {
  const internal = await listen(t, INTERNAL, (_req, res) => res.end('{"secret":"internal-service-answer"}'));
  const s = setup({ fetch: guarded({ 'rebind.example.com': [INTERNAL] }) });
  s.store.tools.set('lookup', webhookTool('lookup', `http://rebind.example.com:${internal.port}/hook`));
  const call = await callTool(s, 'lookup');
  t.equal(internal.seen.length, 0);
  t.equal(call.error_message, 'endpoint address is not allowed: 127.0.0.1');
  t.equal(call.response_body, null);
});

t.test(
  'webhook: NUL and unpaired surrogates in the answer are replaced, too deep an answer kept as text',
  async (t) => {
    const pub = await listen(t, FAKE_PUBLIC, (req, res) => {
      res.setHeader('content-type', 'application/json');
      if (req.url === '/escaped') return void res.end('{"name":"A\\u0000da","half":"\\ud800"}');
      if (req.url === '/raw') return void res.end('plain\u0000text');
      res.end(`${'['.repeat(100)}1${']'.repeat(100)}`);
    });
    const fetch = guarded({ 'hooks.example.com': [FAKE_PUBLIC] });
    const answers: unknown[] = [];
    for (const path of ['escaped', 'raw', 'deep']) {
      const s = setup({ fetch });
      s.store.tools.set('lookup', webhookTool('lookup', `http://hooks.example.com:${pub.port}/${path}`));
      const call = await callTool(s, 'lookup');
      t.equal(call.error_message, null, `${path}: answered`);
      answers.push(call.response_body);
    }
    t.same(
      answers[0],
      { text: '{"name":"A\\u0000da","half":"\\ud800"}' },
      'JSON holding NUL or a lone surrogate: kept as its text',
    );
    t.same(answers[1], { text: 'plain\ufffdtext' }, 'a NUL in text: replaced');
    t.same(answers[2], { text: `${'['.repeat(100)}1${']'.repeat(100)}` }, 'nested past the limit: kept as text');
  },
);

t.test(
  'configuration endpoint: a redirect to 127.0.0.1 ends the conversation with configuration_endpoint_error',
  async (t) => {
    const internal = await listen(t, INTERNAL, (_req, res) => res.end('{"system_prompt":"internal"}'));
    const pub = await listen(t, FAKE_PUBLIC, (_req, res) => {
      res.writeHead(307, { location: `http://127.0.0.1:${internal.port}/config` });
      res.end();
    });
    const s = setup({ fetch: guarded({ 'config.example.com': [FAKE_PUBLIC] }) });
    await s.conv.start({
      kind: 'config',
      config: config({
        configuration_endpoint: { url: `http://config.example.com:${pub.port}/`, timeout_ms: 3000 },
        scripted_engine: {},
      }),
    });
    t.equal(await s.conv.ended, 'configuration_endpoint_error');
    t.equal(s.store.only().finish?.ended_by, 'configuration_endpoint_error');
    t.match(s.client.events('error')[0].error, {
      code: 'configuration_endpoint_error',
      message: 'configuration endpoint: endpoint address is not allowed: 127.0.0.1',
    });
    t.equal(pub.seen.length, 1);
    t.equal(internal.seen.length, 0);
  },
);

t.test('configuration endpoint: overrides holding NUL are an invalid response naming the field', async (t) => {
  const pub = await listen(t, FAKE_PUBLIC, (_req, res) => {
    res.setHeader('content-type', 'application/json');
    res.end('{"system_prompt":"Be kind.\\u0000"}');
  });
  const s = setup({ fetch: guarded({ 'config.example.com': [FAKE_PUBLIC] }) });
  await s.conv.start({
    kind: 'config',
    config: config({
      configuration_endpoint: { url: `http://config.example.com:${pub.port}/`, timeout_ms: 3000 },
      scripted_engine: {},
    }),
  });
  t.equal(await s.conv.ended, 'configuration_endpoint_invalid_response');
  t.match(
    s.client.events('error')[0].error.message,
    'system_prompt: must not contain NUL characters or unpaired surrogates',
  );
});
