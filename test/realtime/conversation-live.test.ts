// A live conversation seen from outside on one media worker (issue 4): the observer socket for an API key and for a
// session token scoped to the conversation (events and both sides of the audio), and a dropped client reconnecting
// within the grace period (the conversation goes on, on the record) but not after it. The two-worker relay of the
// same is test/workers/workers.test.ts.
import { readFileSync } from 'node:fs';
import t from 'tap';
import { api } from '../helpers/server.js';
import { endedConversation, startRealtimeServer, streamAudio, TestClient, wavPcm } from '../helpers/realtime.js';
import { CLOSE_SESSION_EXPIRED } from '../../src/realtime/live-host.js';

t.setTimeout(240_000);

const RATE = 16_000;
const PROMPT = '/usr/share/asterisk/sounds/en_US_f_Allison/tt-weasels.wav';

t.test('observers and reconnect on one worker', async (t) => {
  const server = await startRealtimeServer({ env: { PARLEY_RECONNECT_GRACE_SEC: '3' } });
  t.teardown(() => server.close());
  const http = api(server);
  const auth = { authorization: `Bearer ${server.apiKey}` };
  const sts = `${server.wsUrl}/v1/sts/ws`;

  async function conversation(): Promise<{ client: TestClient; id: string }> {
    const client = await TestClient.open(sts, auth);
    client.send({ type: 'config', input_format: 'pcm_16000', output_format: 'pcm_16000' });
    await client.untilEvent('ready_to_start_conversation');
    return { client, id: String(client.events('conversation_created')[0]?.conversation_id) };
  }

  t.test('observers by API key and by a token scoped to the conversation see events and hear both sides', async (t) => {
    const { client, id } = await conversation();
    const token = await http.post('/v1/auth/session_token', { conversation_ids: [id] });
    t.equal(token.status, 200);
    const observers = {
      key: await TestClient.open(`${server.wsUrl}/v1/conversations/${id}/live/ws`, auth),
      token: await TestClient.open(`${server.wsUrl}/v1/conversations/${id}/live/ws?session_token=${encodeURIComponent(token.body.session_token)}`),
    };
    let streaming = true;
    const stream = streamAudio(client, new Int16Array(0), RATE, { keepGoing: () => streaming });
    for (const [who, o] of Object.entries(observers)) {
      await o.until(() => o.events('live_audio').some((e) => e.side === 'user') || o.ws.readyState === o.ws.CLOSED);
      t.ok(o.events('live_audio').some((e) => e.side === 'user'), `${who}: hears the user`);
    }
    client.send({ type: 'say', text: 'Hello observers.' });
    await Promise.all(Object.values(observers).map((o) => o.untilEvent('assistant_finished_speaking')));
    streaming = false;
    await stream;
    for (const [who, o] of Object.entries(observers)) {
      t.equal(o.events('assistant_started_speaking').length, 1, `${who}: sees the assistant start`);
      t.ok(o.events('live_audio').some((e) => e.side === 'assistant'), `${who}: hears the assistant`);
    }
    client.close();
    for (const [who, o] of Object.entries(observers)) t.equal((await o.closed).code, 1000, `${who}: closed when the conversation ends`);
    t.equal((await endedConversation((p) => http.get(p), id)).ended_by, 'user');
  });

  t.test('a client that drops reconnects within the grace period; the conversation and its record go on', async (t) => {
    const { client, id } = await conversation();
    client.send({ type: 'say', text: 'Before.' });
    await client.untilEvent('assistant_finished_speaking');
    // The connection drops (no close frame): the conversation waits the grace period.
    client.ws.terminate();
    await client.closed;
    const again = await TestClient.open(`${sts}?reconnect_conv_id=${id}`, auth);
    await again.untilEvent('conversation_created');
    t.equal(again.events('conversation_created')[0]?.conversation_id, id, 'the same conversation');
    again.send({ type: 'say', text: 'After.' });
    await again.untilEvent('assistant_finished_speaking');
    t.ok(again.events('audio_chunk').length > 0, 'it speaks to the new socket');
    again.close();
    const c = await endedConversation((p) => http.get(p), id);
    t.equal(c.ended_by, 'user', 'the client closed the new socket: ended_by user');
    t.same(c.items.map((i: { live_transcript: string }) => i.live_transcript), ['Before.', 'After.'], 'both sockets on one record');
  });

  t.test('binary frames are refused until config negotiates them, and still reach the conversation after a reconnect', async (t) => {
    const plain = await TestClient.open(sts, auth);
    const frame = Buffer.alloc((2 * 8000 * 20) / 1000);
    plain.ws.send(frame, { binary: true });
    await plain.untilEvent('error');
    plain.send({ type: 'config', input_format: 'pcm_8000', output_format: 'pcm_8000' });
    await plain.untilEvent('ready_to_start_conversation');
    plain.ws.send(frame, { binary: true });
    await plain.untilEvent('error', 2);
    t.same(plain.events('error').map((e) => (e.error as { code: string }).code), ['binary_not_negotiated', 'binary_not_negotiated'], 'before config, and after a config without binary_audio');
    plain.close();

    const client = await TestClient.open(sts, auth);
    client.send({ type: 'config', input_format: 'pcm_8000', output_format: 'pcm_8000', binary_audio: true });
    await client.untilEvent('ready_to_start_conversation');
    const id = String(client.events('conversation_created')[0]?.conversation_id);
    client.ws.terminate();
    await client.closed;
    const again = await TestClient.open(`${sts}?reconnect_conv_id=${id}`, auth);
    await again.untilEvent('conversation_created');
    const prompt = wavPcm(readFileSync(PROMPT));
    let streaming = true;
    const stream = streamAudio(again, prompt, 8000, { binary: true, keepGoing: () => streaming && again.events('user_finished_speaking').length === 0 });
    await again.untilEvent('user_finished_speaking');
    streaming = false;
    await stream;
    t.equal(again.events('user_started_speaking').length, 1, "the new socket's binary frames reached the VAD");
    t.equal(again.events('error').length, 0, 'no error: binary audio is still negotiated');
    again.close();
    const c = await endedConversation((p) => http.get(p), id);
    t.equal(c.items.filter((i: { role: string }) => i.role === 'user').length, 1, "the user's turn is on the record");
  });

  t.test('after the grace period the conversation is over: a reconnect is refused', async (t) => {
    const { client, id } = await conversation();
    client.ws.terminate();
    await endedConversation((p) => http.get(p), id);
    const late = await TestClient.open(`${sts}?reconnect_conv_id=${id}`, auth);
    t.equal((await late.closed).code, CLOSE_SESSION_EXPIRED, 'too late: 4800 (session expired)');
  });
});
