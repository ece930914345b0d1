// What the realtime port refuses at its edge, on a real node (control plane, media worker, PostgreSQL) started
// WITHOUT PARLEY_ALLOW_PRIVATE_ENDPOINTS: a webhook tool whose host resolves to loopback is not called (the tool call
// records the refusal, nothing of the internal service); an STS `config` holding NUL or an unpaired surrogate in
// external_id, template_variables (name or value), welcome_message or system_prompt is an `invalid_config` error
// naming the field, and no conversation is stored; a later message holding one (`say`) is an `invalid_message`
// and the conversation goes on and is saved; an API key in `?session_token=` is refused.
import { createServer, request } from 'node:http';
import type { AddressInfo } from 'node:net';
import t from 'tap';
import { insertTool } from '../../src/store/tools.js';
import { api } from '../helpers/server.js';
import { startRealtimeServer, TestClient, upgradeStatus } from '../helpers/realtime.js';

t.setTimeout(240_000);

t.test('realtime input guards', async (t) => {
  const server = await startRealtimeServer({
    env: { PARLEY_RECONNECT_GRACE_SEC: '0', PARLEY_ENGINE_DEFAULT: 'scripted' },
  });
  t.teardown(() => server.close());
  const http = api(server);
  const sts = `${server.wsUrl}/v1/sts/ws`;
  const open = () => TestClient.open(sts, { authorization: `Bearer ${server.apiKey}` });
  const format = { input_format: 'pcm_16000', output_format: 'pcm_16000' };
  const conversationCount = async () =>
    (await http.get('/v1/conversations?limit=100')).body.conversations.length as number;

  t.test(
    'a webhook tool whose host resolves to loopback is refused when called; the internal answer is never stored',
    async (t) => {
      const internal: string[] = [];
      const service = createServer((req, res) => {
        internal.push(req.url!);
        res.setHeader('content-type', 'application/json');
        res.end(JSON.stringify({ secret: 'internal-service-answer' }));
      });
      await new Promise<void>((r) => service.listen(0, '127.0.0.1', r));
      t.teardown(() => new Promise<void>((r) => service.close(() => r())));
      const port = (service.address() as AddressInfo).port;
      // Stored as it would be by a name that resolved publicly when saved and to loopback now: `localhost` resolves
      // to 127.0.0.1 on the machine, whatever the save-time rules said.
      await insertTool(server.sql, server.orgId, server.projectId, {
        type: 'custom_webhook',
        name: 'leak',
        description: 'Fetch something',
        execution_mode: 'sync',
        parameters: [],
        endpoint_method: 'GET',
        endpoint_url: `http://localhost:${port}/admin/secret`,
      });
      const c = await open();
      c.send({
        type: 'config',
        ...format,
        tools: ['leak'],
        scripted_engine: {
          responses: [{ say: 'One moment.', tool_calls: [{ name: 'leak', arguments: {} }] }, { say: 'Done.' }],
        },
      });
      await c.untilEvent('ready_to_start_conversation');
      const id = String(c.events('conversation_created')[0].conversation_id);
      c.send({ type: 'generate_reply' });
      await c.untilEvent('assistant_finished_speaking');
      // The record is written as the call goes: wait for the tool call's entry, then hang up.
      for (let i = 0; i < 300; i++) {
        const live = (await http.get(`/v1/conversations/${id}`)).body.conversation;
        if (live.items.some((item: { tool_calls?: unknown[] }) => (item.tool_calls ?? []).length > 0)) break;
        await new Promise((r) => setTimeout(r, 50));
      }
      c.close();
      const conv = await server.endedConversation(id);
      const calls = conv.items.flatMap((i: { tool_calls?: unknown[] }) => i.tool_calls ?? []);
      t.equal(calls.length, 1, 'the tool call is recorded');
      t.match(calls[0], {
        tool: { name: 'leak' },
        error_message: /^endpoint address is not allowed: (127\.0\.0\.1|::1)$/,
        response_body: null,
        response_status_code: null,
      });
      t.notMatch(JSON.stringify(conv), /internal-service-answer/, 'nothing of the internal answer in the record');
      t.same(internal, [], 'the internal service got no request');
    },
  );

  t.test(
    'config with NUL or an unpaired surrogate: invalid_config naming the field, no conversation stored',
    async (t) => {
      const before = await conversationCount();
      const cases: [string, Record<string, unknown>, string][] = [
        ['external_id', { external_id: 'crm\u0000-1' }, 'external_id'],
        ['template_variables value', { template_variables: { name: 'Ada\u0000' } }, 'template_variables.name'],
        ['template_variables name', { template_variables: { ['na\u0000me']: 'Ada' } }, 'template_variables'],
        ['welcome_message', { welcome_message: 'Hello\u0000' }, 'welcome_message'],
        ['system_prompt', { system_prompt: 'Be kind.\u0000' }, 'system_prompt'],
        ['system_prompt, lone surrogate', { system_prompt: 'Be kind.\ud800' }, 'system_prompt'],
      ];
      for (const [what, fields, field] of cases) {
        const c = await open();
        c.send({ type: 'config', ...format, ...fields });
        const closed = await c.closed;
        const error = c.events('error')[0] as
          { error: { code: string; message: string }; param_errors: Record<string, string> } | undefined;
        t.equal(error?.error.code, 'invalid_config', `${what}: invalid_config`);
        t.same(
          error?.param_errors,
          {
            [field]:
              field === 'template_variables'
                ? 'a key must not contain NUL characters or unpaired surrogates'
                : 'must not contain NUL characters or unpaired surrogates',
          },
          `${what}: names ${field}`,
        );
        t.notMatch(JSON.stringify(error), /\\u0000|\\ud800/i, `${what}: the error does not repeat the offending text`);
        t.equal(closed.code, 1008, `${what}: closed as a policy violation`);
        t.equal(c.events('conversation_created').length, 0, `${what}: no conversation created`);
      }
      t.equal(await conversationCount(), before, 'no conversation row was written');
    },
  );

  t.test('a later message with NUL (say) is an invalid_message; the conversation goes on and is saved', async (t) => {
    const c = await open();
    c.send({ type: 'config', ...format, scripted_engine: { responses: [{ say: 'Fine.' }] } });
    await c.untilEvent('ready_to_start_conversation');
    const id = String(c.events('conversation_created')[0].conversation_id);
    c.send({ type: 'say', text: 'Hello\u0000there' });
    await c.untilEvent('error');
    t.match(c.events('error')[0], {
      error: { code: 'invalid_message' },
      param_errors: { text: 'must not contain NUL characters or unpaired surrogates' },
    });
    c.send({ type: 'add_system_message', system_message: 'x\udc00' });
    await c.untilEvent('error', 2);
    t.match(c.events('error')[1], {
      error: { code: 'invalid_message' },
      param_errors: { system_message: /unpaired surrogates/ },
    });
    c.send({ type: 'tool_call_output', tool_call_id: 'call_1', output: { deep: { ['k\u0000']: 1 } } });
    await c.untilEvent('error', 3);
    t.match(c.events('error')[2], {
      error: { code: 'invalid_message' },
      param_errors: { 'output.deep': /a key must not/ },
    });
    c.send({ type: 'say', text: 'Hello there.' });
    await c.untilEvent('assistant_finished_speaking');
    c.close();
    const conv = await server.endedConversation(id);
    t.equal(conv.ended_by, 'user', 'the conversation ended normally and its record was saved');
    t.match(conv.live_transcript, /Hello there\./);
  });

  t.test('an API key in ?session_token= is refused; a session token there is accepted', async (t) => {
    const res = await refusedUpgrade(`${sts}?session_token=${encodeURIComponent(server.apiKey)}`);
    t.equal(res.status, 401);
    const body = JSON.parse(res.body);
    t.equal(body.error.code, 'unauthorized');
    t.match(body.error.message, /Authorization header/, 'the message says where an API key goes');
    const token = await http.post('/v1/auth/session_token', {});
    t.equal(
      await upgradeStatus(`${sts}?session_token=${encodeURIComponent(token.body.session_token)}`),
      101,
      'a session token opens the socket',
    );
    t.equal(
      await upgradeStatus(sts, { authorization: `Bearer ${server.apiKey}` }),
      101,
      'an API key in the header opens it',
    );
  });
});

/** The status and body of an upgrade the server answers with something else than 101. */
function refusedUpgrade(url: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(url.replace(/^ws:/, 'http:'), {
      headers: {
        connection: 'Upgrade',
        upgrade: 'websocket',
        'sec-websocket-version': '13',
        'sec-websocket-key': 'dGhlIHNhbXBsZSBub25jZQ==',
      },
    });
    req.on('upgrade', (_res, socket) => {
      socket.destroy();
      reject(new Error('the upgrade was accepted'));
    });
    req.on('response', (res) => {
      let body = '';
      res.on('data', (c) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode!, body }));
    });
    req.on('error', reject);
    req.end();
  });
}
