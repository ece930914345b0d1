// The realtime port's authentication (docs/sts-protocol.md): API key by
// header, session token by query; a token scoped to conversation_ids cannot open /v1/sts/ws; observers need a
// key or a token covering the conversation.
import t from 'tap';
import { api } from '../helpers/server.js';
import { startRealtimeServer, TestClient, upgradeStatus } from '../helpers/realtime.js';

t.setTimeout(120_000);

t.test('realtime authentication', async (t) => {
  const server = await startRealtimeServer();
  t.teardown(() => server.close());
  const client = api(server);
  const sts = server.stsUrl;

  t.equal(await upgradeStatus(sts), 401, 'no credentials: 401');
  t.equal(await upgradeStatus(sts, { authorization: 'Bearer pk_not-a-real-key' }), 401, 'unknown key: 401');

  const byKey = await server.openSts();
  t.pass('an API key opens the STS socket');
  byKey.close();
  await byKey.closed;

  const open = await client.post('/v1/auth/session_token', {});
  t.equal(open.status, 200, 'session token minted');
  const byToken = await TestClient.open(`${sts}?session_token=${encodeURIComponent(open.body.session_token)}`);
  t.pass('an unscoped session token opens the STS socket');
  byToken.close();
  await byToken.closed;

  const scoped = await client.post('/v1/auth/session_token', {
    conversation_ids: ['conv_00000000-0000-4000-8000-000000000000'],
  });
  t.equal(scoped.status, 200, 'scoped session token minted');
  const scopedToken = encodeURIComponent(scoped.body.session_token);
  t.equal(await upgradeStatus(`${sts}?session_token=${scopedToken}`), 403, 'a scoped token cannot open the STS socket');

  const observer = server.liveUrl;
  t.equal(
    await upgradeStatus(`${observer('conv_11111111-1111-4111-8111-111111111111')}?session_token=${scopedToken}`),
    403,
    'a scoped token cannot observe a conversation outside its scope',
  );
  const notLive = await TestClient.open(
    `${observer('conv_00000000-0000-4000-8000-000000000000')}?session_token=${scopedToken}`,
  );
  const { code } = await notLive.closed;
  t.equal(code, 4404, 'a scoped token may observe its conversation; one not live closes with 4404');

  await server.sql`update organizations set ip_allowlist = ${server.sql.json(['10.9.8.0/24'])} where id = ${server.orgId}`;
  t.equal(await upgradeStatus(sts, server.auth), 403, 'a client address outside the workspace ip_allowlist: 403');
});
