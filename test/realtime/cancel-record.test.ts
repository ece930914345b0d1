// A live conversation canceled through the API (POST /v1/conversations/{id}/cancel) keeps what the call produced:
// the cancel ends the row first (ended_by user_canceled), the live side hears of it at its next write and ends, and
// its finish fills in the transcript and stores the recording behind audio_url (src/store/conversations.ts
// finishConversation). Real server, real sockets, PostgreSQL.
import { gunzipSync } from 'node:zlib';
import t from 'tap';
import { api } from '../helpers/server.js';
import { startRealtimeServer, TestClient } from '../helpers/realtime.js';

t.setTimeout(240_000);

const GZIP_MAGIC = [0x1f, 0x8b];
/** WAV header (RIFF, WAVE fmt chunk): channel count at byte 22. */
const WAV_CHANNELS_OFFSET = 22;

t.test('a canceled live conversation keeps its transcript and a recording that downloads', async (t) => {
  const server = await startRealtimeServer({ env: { PARLEY_RECONNECT_GRACE_SEC: '0' } });
  t.teardown(() => server.close());
  const http = api(server);
  const c = await TestClient.open(`${server.wsUrl}/v1/sts/ws`, { authorization: `Bearer ${server.apiKey}` });
  c.send({ type: 'config', input_format: 'pcm_16000', output_format: 'pcm_16000', welcome_message: 'Hello there.' });
  await c.untilEvent('assistant_finished_speaking');
  const id = String(c.events('conversation_created')[0]?.conversation_id);

  const canceled = await http.post(`/v1/conversations/${id}/cancel`);
  t.equal(canceled.status, 200, 'canceled');
  const atCancel = (await http.get(`/v1/conversations/${id}`)).body.conversation;
  t.equal(atCancel.ended_by, 'user_canceled');
  // The live side learns of the cancel at its next write (docs/CONTRACTS.md): it ends and saves its record, then
  // closes the socket.
  c.send({ type: 'set_external_id', external_id: 'after-cancel' });
  await c.closed;

  const conv = (await http.get(`/v1/conversations/${id}`)).body.conversation;
  t.equal(conv.ended_by, 'user_canceled', 'the cancel stands');
  t.equal(conv.ended_at, atCancel.ended_at, "the cancel's ended_at");
  t.equal(conv.duration_ms, atCancel.duration_ms, "the cancel's duration");
  t.equal(conv.live_transcript, 'assistant: Hello there.', 'the transcript the call produced is stored');
  t.match(conv.audio_url, /\.wav\.gz\?expires=\d+&sig=/, 'a recording link');
  const res = await fetch(conv.audio_url);
  t.equal(res.status, 200, 'the recording downloads');
  const gz = Buffer.from(await res.arrayBuffer());
  t.same([...gz.subarray(0, 2)], GZIP_MAGIC, 'gzip');
  const wav = gunzipSync(gz);
  t.equal(wav.toString('ascii', 0, 4), 'RIFF', 'a WAV file');
  t.equal(wav.readUInt16LE(WAV_CHANNELS_OFFSET), 2, 'both sides');
  t.ok(wav.length > 44 + 16000 * 2 * 2 * 0.5, `holds the call's audio (${wav.length} bytes)`);
});
