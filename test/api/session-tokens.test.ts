// Session tokens over real HTTP: default ttl 300 s, conversation_ids scope, API keys only
// (403 otherwise), expiry, validation; on both databases.
import t from 'tap';
import { lookupCredential } from '../../src/auth/authenticate.js';
import { api, DB_KINDS, startTestServer } from '../helpers/server.js';

// Real databases (and a PGlite template made on first use) under a parallel suite: more than tap's default.
t.setTimeout(300_000);

for (const db of DB_KINDS) {
  t.test(`session tokens on ${db}`, { timeout: 120_000 }, async (t) => {
    const server = await startTestServer({ db });
    t.teardown(() => server.close());
    const client = api(server);

    t.test('default ttl is 300 s; the token authenticates as a session token of the workspace', async (t) => {
      const before = Date.now();
      const res = await client.post('/v1/auth/session_token', {});
      const after = Date.now();
      t.equal(res.status, 200);
      t.match(res.body, { session_token: /^st_[A-Za-z0-9_-]{43}$/, expires_at: String });
      const expires = Date.parse(res.body.expires_at);
      t.ok(
        expires >= Math.floor(before / 1000) * 1000 + 300_000 - 1000 && expires <= after + 300_000,
        'issued time plus 300 s',
      );
      const cred = await lookupCredential(server.sql, res.body.session_token, new Date());
      t.match(cred?.auth, { kind: 'session_token', orgId: server.orgId, conversationIds: null });
      const noBody = await client.post('/v1/auth/session_token');
      t.equal(noBody.status, 200, 'the body is optional');
    });

    t.test('ttl_seconds and conversation_ids are kept', async (t) => {
      const res = await client.post('/v1/auth/session_token', {
        ttl_seconds: 60,
        conversation_ids: ['conv_a', 'conv_b'],
      });
      t.equal(res.status, 200);
      const cred = await lookupCredential(server.sql, res.body.session_token, new Date());
      t.same(cred?.auth.kind === 'session_token' && cred.auth.conversationIds, ['conv_a', 'conv_b']);
      t.same(
        await lookupCredential(server.sql, res.body.session_token, new Date(Date.parse(res.body.expires_at) + 1)),
        null,
        'not valid after expires_at',
      );
    });

    t.test('only API keys may create session tokens (403); other routes refuse session tokens', async (t) => {
      const { body } = await client.post('/v1/auth/session_token', {});
      const res = await client.post('/v1/auth/session_token', {}, { key: body.session_token });
      t.equal(res.status, 403);
      t.match(res.body, { error: { message: /only API keys/ } });
      t.equal((await client.get('/v1/projects', undefined, { key: body.session_token })).status, 403);
    });

    t.test('an expired token gives 401', async (t) => {
      const { body } = await client.post('/v1/auth/session_token', { ttl_seconds: 5 });
      await server.sql`update session_tokens set expires_at = now() - interval '1 second'`;
      const res = await client.post('/v1/auth/session_token', {}, { key: body.session_token });
      t.equal(res.status, 401);
    });

    t.test('validation: ttl_seconds and conversation_ids', async (t) => {
      for (const [payload, param] of [
        [{ ttl_seconds: 0 }, 'ttl_seconds'],
        [{ ttl_seconds: 1.5 }, 'ttl_seconds'],
        [{ ttl_seconds: 'x' }, 'ttl_seconds'],
        [{ conversation_ids: 'conv_a' }, 'conversation_ids'],
        [{ conversation_ids: [''] }, 'conversation_ids.0'],
        [{ other: 1 }, 'other'],
      ] as const) {
        const res = await client.post('/v1/auth/session_token', payload);
        t.equal(res.status, 400, JSON.stringify(payload));
        t.type(res.body.error.message, 'string');
        t.ok(res.body.param_errors[param], `param_errors names ${param}: ${JSON.stringify(res.body.param_errors)}`);
      }
      t.equal((await client.post('/v1/auth/session_token', {}, { key: null })).status, 401);
    });
  });
}
