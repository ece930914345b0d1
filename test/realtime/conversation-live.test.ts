// A live conversation seen from outside on one media worker: the observer socket for an API key and for a
// session token scoped to the conversation (events and both sides of the audio), and a dropped client reconnecting
// within the grace period (the conversation goes on, on the record) but not after it. The two-worker relay of the
// same is test/workers/workers.test.ts.
import { readFileSync } from 'node:fs';
import t from 'tap';
import { soundFile } from '../helpers/debian-packages.js';
import { api } from '../helpers/server.js';
import { startRealtimeServer, streamAudio, TestClient, wavPcm } from '../helpers/realtime.js';
import { CLOSE_SESSION_EXPIRED } from '../../src/realtime/live-host.js';

t.setTimeout(240_000);

const RATE = 16_000;
const PROMPT = soundFile('tt-weasels');

t.test('observers and reconnect on one worker', async (t) => {
  const server = await startRealtimeServer({ env: { PARLEY_RECONNECT_GRACE_SEC: '3' } });
  t.teardown(() => server.close());
  const http = api(server);
  const conversation = () => server.startConversation({ input_format: 'pcm_16000', output_format: 'pcm_16000' });

  t.test('observers by API key and by a token scoped to the conversation see events and hear both sides', async (t) => {
    const { client, id } = await conversation();
    const token = await http.post('/v1/auth/session_token', { conversation_ids: [id] });
    t.equal(token.status, 200);
    const observers = {
      key: await TestClient.open(server.liveUrl(id), server.auth),
      token: await TestClient.open(
        `${server.liveUrl(id)}?session_token=${encodeURIComponent(token.body.session_token)}`,
      ),
    };
    let streaming = true;
    const stream = streamAudio(client, new Int16Array(0), RATE, { keepGoing: () => streaming });
    for (const [who, o] of Object.entries(observers)) {
      await o.until(() => o.events('live_audio').some((e) => e.side === 'user') || o.ws.readyState === o.ws.CLOSED);
      t.ok(
        o.events('live_audio').some((e) => e.side === 'user'),
        `${who}: hears the user`,
      );
    }
    client.send({ type: 'say', text: 'Hello observers.' });
    await Promise.all(Object.values(observers).map((o) => o.untilEvent('assistant_finished_speaking')));
    streaming = false;
    await stream;
    for (const [who, o] of Object.entries(observers)) {
      t.equal(o.events('assistant_started_speaking').length, 1, `${who}: sees the assistant start`);
      t.ok(
        o.events('live_audio').some((e) => e.side === 'assistant'),
        `${who}: hears the assistant`,
      );
    }
    client.close();
    for (const [who, o] of Object.entries(observers))
      t.equal((await o.closed).code, 1000, `${who}: closed when the conversation ends`);
    t.equal((await server.endedConversation(id)).ended_by, 'user');
  });

  t.test('a client that drops reconnects within the grace period; the conversation and its record go on', async (t) => {
    const { client, id } = await conversation();
    client.send({ type: 'say', text: 'Before.' });
    await client.untilEvent('assistant_finished_speaking');
    // The connection drops (no close frame): the conversation waits the grace period.
    client.ws.terminate();
    await client.closed;
    const again = await server.openSts(`?reconnect_conv_id=${id}`);
    await again.untilEvent('conversation_created');
    t.equal(again.events('conversation_created')[0]?.conversation_id, id, 'the same conversation');
    again.send({ type: 'say', text: 'After.' });
    await again.untilEvent('assistant_finished_speaking');
    t.ok(again.events('audio_chunk').length > 0, 'it speaks to the new socket');
    again.close();
    const c = await server.endedConversation(id);
    t.equal(c.ended_by, 'user', 'the client closed the new socket: ended_by user');
    t.same(
      c.items.map((i: { live_transcript: string }) => i.live_transcript),
      ['Before.', 'After.'],
      'both sockets on one record',
    );
  });

  t.test(
    'binary frames are refused until config negotiates them, and still reach the conversation after a reconnect',
    async (t) => {
      const plain = await server.openSts();
      const frame = Buffer.alloc((2 * 8000 * 20) / 1000);
      plain.ws.send(frame, { binary: true });
      await plain.untilEvent('error');
      plain.send({ type: 'config', input_format: 'pcm_8000', output_format: 'pcm_8000' });
      await plain.untilEvent('ready_to_start_conversation');
      plain.ws.send(frame, { binary: true });
      await plain.untilEvent('error', 2);
      t.same(
        plain.events('error').map((e) => (e.error as { code: string }).code),
        ['binary_not_negotiated', 'binary_not_negotiated'],
        'before config, and after a config without binary_audio',
      );
      plain.close();

      const { client, id } = await server.startConversation({
        input_format: 'pcm_8000',
        output_format: 'pcm_8000',
        binary_audio: true,
      });
      client.ws.terminate();
      await client.closed;
      const again = await server.openSts(`?reconnect_conv_id=${id}`);
      await again.untilEvent('conversation_created');
      const prompt = wavPcm(readFileSync(PROMPT));
      let streaming = true;
      const stream = streamAudio(again, prompt, 8000, {
        binary: true,
        keepGoing: () => streaming && again.events('user_finished_speaking').length === 0,
      });
      await again.untilEvent('user_finished_speaking');
      streaming = false;
      await stream;
      t.equal(again.events('user_started_speaking').length, 1, "the new socket's binary frames reached the VAD");
      t.equal(again.events('error').length, 0, 'no error: binary audio is still negotiated');
      again.close();
      const c = await server.endedConversation(id);
      t.equal(c.items.filter((i: { role: string }) => i.role === 'user').length, 1, "the user's turn is on the record");
    },
  );

  t.test('after the grace period the conversation is over: a reconnect is refused', async (t) => {
    const { client, id } = await conversation();
    client.ws.terminate();
    await server.endedConversation(id);
    const late = await server.openSts(`?reconnect_conv_id=${id}`);
    t.equal((await late.closed).code, CLOSE_SESSION_EXPIRED, 'too late: 4800 (session expired)');
  });
});
