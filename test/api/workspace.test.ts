// The workspace over real HTTP: get, update, logo_url and ip_allowlist validation, and the
// allowlist enforced on every request once set, with X-Forwarded-For believed only from trusted proxies.
import t from 'tap';
import { api, DB_KINDS, startTestServer } from '../helpers/server.js';

// Real databases (and a PGlite template made on first use) under a parallel suite: more than tap's default.
t.setTimeout(300_000);

for (const db of DB_KINDS) {
  t.test(`workspace on ${db}`, { timeout: 120_000 }, async (t) => {
    // 127.0.0.1 (the test client) is the trusted proxy: X-Forwarded-For from it names the client.
    const server = await startTestServer({ db, env: { PARLEY_TRUSTED_PROXIES: '127.0.0.1, 10.9.0.0/16' } });
    t.teardown(() => server.close());
    const client = api(server);

    t.test('get and update only what is sent', async (t) => {
      const got = await client.get('/v1/workspace');
      t.equal(got.status, 200);
      t.match(got.body.workspace, {
        id: server.orgId,
        logo_url: null,
        invite_link_allowed_domains: [],
        ip_allowlist: [],
        features: {},
      });
      const upd = await client.patch('/v1/workspace', {
        logo_url: 'https://cdn.example.com/brand/logo.svg',
        invite_link_allowed_domains: ['Example.com'],
      });
      t.same(upd.body, { success: true });
      t.same((await client.patch('/v1/workspace', {})).body, { success: true });
      const after = (await client.get('/v1/workspace')).body.workspace;
      t.equal(after.logo_url, 'https://cdn.example.com/brand/logo.svg');
      t.same(after.invite_link_allowed_domains, ['example.com']);
      t.same((await client.patch('/v1/workspace', { logo_url: null })).body, { success: true });
      t.equal((await client.get('/v1/workspace')).body.workspace.logo_url, null);
    });

    t.test('validation: logo_url, domains, ip_allowlist entries', async (t) => {
      const cases: [unknown, string][] = [
        [{ logo_url: 'http://cdn.example.com/logo.png' }, 'logo_url'],
        [{ logo_url: 'https://cdn.example.com/logo.jpg' }, 'logo_url'],
        [{ logo_url: 'not a url' }, 'logo_url'],
        [{ invite_link_allowed_domains: ['not a domain'] }, 'invite_link_allowed_domains.0'],
        [{ ip_allowlist: ['10.0.0.1', '300.1.1.1'] }, 'ip_allowlist.1'],
        [{ ip_allowlist: ['10.0.0.0/33'] }, 'ip_allowlist.0'],
        [{ ip_allowlist: ['2001:db8::/129'] }, 'ip_allowlist.0'],
        [{ ip_allowlist: 'x' }, 'ip_allowlist'],
        [{ colour: 'red' }, 'colour'],
      ];
      for (const [payload, param] of cases) {
        const res = await client.patch('/v1/workspace', payload);
        t.equal(res.status, 400, JSON.stringify(payload));
        t.ok(res.body.param_errors?.[param], `${param} named in ${JSON.stringify(res.body)}`);
      }
      t.same((await client.patch('/v1/workspace', { logo_url: 'https://cdn.example.com/a/logo.PNG' })).body, {
        success: true,
      });
    });

    t.test('ip_allowlist is enforced on every request once set', async (t) => {
      const from = (ip: string) => ({ headers: { 'x-forwarded-for': ip } });
      t.same((await client.patch('/v1/workspace', { ip_allowlist: ['203.0.113.0/24', '2001:db8::1'] })).body, {
        success: true,
      });
      const direct = await client.get('/v1/projects');
      t.equal(direct.status, 403, 'the proxy itself (127.0.0.1) is not allowed');
      t.match(direct.body, { error: { message: /ip_allowlist/, code: 'ip_not_allowed' } });
      t.equal((await client.get('/v1/projects', undefined, from('203.0.113.9'))).status, 200);
      t.equal((await client.get('/v1/projects', undefined, from('2001:db8::1'))).status, 200);
      t.equal((await client.get('/v1/projects', undefined, from('198.51.100.1'))).status, 403);
      // Right-most untrusted hop wins: a client cannot prepend an allowed address.
      t.equal((await client.get('/v1/projects', undefined, from('203.0.113.9, 198.51.100.1'))).status, 403);
      t.equal((await client.get('/v1/projects', undefined, from('198.51.100.1, 203.0.113.9, 10.9.1.1'))).status, 200);
      t.equal((await client.get('/v1/projects', undefined, { key: null, ...from('203.0.113.9') })).status, 401);
      const cleared = await client.patch('/v1/workspace', { ip_allowlist: [] }, from('203.0.113.9'));
      t.same(cleared.body, { success: true });
      t.equal((await client.get('/v1/projects')).status, 200);
    });

    t.test('session tokens cannot read or update the workspace', async (t) => {
      const { body } = await client.post('/v1/auth/session_token', {});
      t.equal((await client.get('/v1/workspace', undefined, { key: body.session_token })).status, 403);
      t.equal((await client.patch('/v1/workspace', {}, { key: body.session_token })).status, 403);
      t.equal((await client.patch('/v1/workspace', {}, { key: null })).status, 401);
    });
  });
}

t.test('without trusted proxies X-Forwarded-For is ignored', { timeout: 60_000 }, async (t) => {
  const server = await startTestServer({ db: 'postgres' });
  t.teardown(() => server.close());
  const client = api(server);
  await client.patch('/v1/workspace', { ip_allowlist: ['203.0.113.0/24'] });
  t.equal((await client.get('/v1/projects', undefined, { headers: { 'x-forwarded-for': '203.0.113.9' } })).status, 403);
  // Set behind the API (through it, this client would be refused). A change made outside this node's routes
  // reaches its credential cache by NOTIFY, asynchronously: forget at once instead of racing it.
  await server.sql`update organizations set ip_allowlist = '["127.0.0.1"]'::jsonb`;
  server.ctx.credentials.forgetWorkspace(server.orgId);
  t.equal((await client.get('/v1/projects')).status, 200, 'the socket address is judged');
});
