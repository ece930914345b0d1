// The record a conversation over the STS WebSocket leaves behind: external_id from config
// and from set_external_id (found by it), origin, the recording behind audio_url in both containers (wav.gz by
// default, wav on request), zero data retention keeping nothing said, websocket_timeout_sec closing an idle
// client's conversation, a cancel through the API keeping what the call produced (its recording file too), and a
// recording the store refuses (deleted after the cancel) leaving no file behind. Real server, real sockets,
// PostgreSQL.
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import t from 'tap';
import { RECORDINGS_DIR } from '../../src/media/recording.js';
import { api } from '../helpers/server.js';
import { startRealtimeServer, type TestClient } from '../helpers/realtime.js';

t.setTimeout(240_000);

const GZIP_MAGIC = [0x1f, 0x8b];
/** WAV header (RIFF, WAVE fmt chunk): channel count at byte 22. */
const WAV_CHANNELS_OFFSET = 22;

t.test('the record of a live conversation', async (t) => {
  const server = await startRealtimeServer({ env: { PARLEY_RECONNECT_GRACE_SEC: '0' } });
  t.teardown(() => server.close());
  const http = api(server);
  const open = () => server.openSts();
  const created = (c: TestClient) => String(c.events('conversation_created')[0]?.conversation_id);
  const recordingsDir = join(server.settings.PARLEY_DATA_DIR, RECORDINGS_DIR);
  /** The files of a conversation's recording in the recordings directory (`<id>.wav`, `<id>.wav.gz`). */
  const recordingFiles = (id: string) => readdirSync(recordingsDir).filter((f) => f.startsWith(`${id}.`));

  t.test('external_id from config, then set_external_id; origin; audio_url in wav.gz and wav', async (t) => {
    const c = await open();
    c.send({
      type: 'config',
      input_format: 'pcm_16000',
      output_format: 'pcm_16000',
      welcome_message: 'Hello there.',
      external_id: 'crm-1',
    });
    await c.untilEvent('assistant_finished_speaking');
    const id = created(c);
    c.send({ type: 'set_external_id', external_id: 'crm-2' });
    c.close();
    const conv = await server.endedConversation(id);
    t.equal(conv.external_id, 'crm-2', 'set_external_id replaced the one from config');
    t.equal(conv.origin, 'direct', 'opened with an API key: origin direct');
    const found = await http.get('/v1/conversations?external_id=crm-2');
    t.equal(found.body.conversation?.id, id, 'found by its external_id');

    t.match(conv.audio_url, /\.wav\.gz\?expires=\d+&sig=/, 'wav.gz by default');
    const gz = await fetch(conv.audio_url);
    t.equal(gz.status, 200);
    const gzBytes = Buffer.from(await gz.arrayBuffer());
    t.same([...gzBytes.subarray(0, 2)], GZIP_MAGIC, 'gzip');
    const fromGz = gunzipSync(gzBytes);

    const asWav = await http.get(`/v1/conversations/${id}?audio_container=wav`);
    t.match(asWav.body.conversation.audio_url, /\.wav\?expires=\d+&sig=/, 'wav on request');
    const wav = await fetch(asWav.body.conversation.audio_url);
    t.equal(wav.status, 200);
    const wavBytes = Buffer.from(await wav.arrayBuffer());
    t.equal(wavBytes.toString('ascii', 0, 4), 'RIFF', 'a WAV file');
    t.equal(wavBytes.readUInt16LE(WAV_CHANNELS_OFFSET), 2, 'both sides');
    t.ok(wavBytes.equals(fromGz), 'the same recording in either container');
  });

  t.test('zero data retention: no recording, no transcripts', async (t) => {
    const c = await open();
    c.send({
      type: 'config',
      input_format: 'pcm_16000',
      output_format: 'pcm_16000',
      welcome_message: 'A secret.',
      data_retention_policy: { zero_data_retention: true },
    });
    await c.untilEvent('assistant_finished_speaking');
    const id = created(c);
    c.close();
    const conv = await server.endedConversation(id);
    t.equal(conv.audio_url, null, 'no recording link');
    t.equal(conv.live_transcript, null, 'no transcript');
    t.same(
      conv.items.map((i: { role: string; live_transcript: string | null }) => [i.role, i.live_transcript]),
      [['assistant', null]],
      'the item without its text',
    );
  });

  t.test('websocket_timeout_sec: an idle client is closed and the conversation ends', async (t) => {
    const c = await open();
    c.send({ type: 'config', input_format: 'pcm_16000', output_format: 'pcm_16000', websocket_timeout_sec: 1 });
    await c.untilEvent('ready_to_start_conversation');
    const id = created(c);
    const closed = await c.closed;
    t.equal(closed.code, 1000, 'closed normally by the server');
    const conv = await server.endedConversation(id);
    t.equal(conv.ended_by, 'user');
  });

  // POST /v1/conversations/{id}/cancel ends the row first (ended_by user_canceled); the live side hears of it at its
  // next write and ends, and its finish fills in what the call produced (src/store/conversations.ts
  // finishConversation): the cancel's ending stands, the transcript and the recording are kept.
  t.test('a canceled live conversation keeps its transcript and a recording that downloads', async (t) => {
    const c = await open();
    c.send({ type: 'config', input_format: 'pcm_16000', output_format: 'pcm_16000', welcome_message: 'Hello there.' });
    await c.untilEvent('assistant_finished_speaking');
    const id = created(c);

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
    t.ok(recordingFiles(id).length > 0, `the stored recording's file is kept (${recordingFiles(id).join(', ')})`);
  });

  // DELETE /v1/conversations/{id} between the cancel and the live side's end: the finish that follows finds the
  // recordings deleted and refuses the recording row (finishConversation), so nothing would ever point at the .wav the
  // call wrote; the record removes it (src/conversation/record.ts).
  t.test('a recording refused by the store (deleted after the cancel) leaves no file behind', async (t) => {
    const c = await open();
    c.send({ type: 'config', input_format: 'pcm_16000', output_format: 'pcm_16000', welcome_message: 'Hello there.' });
    await c.untilEvent('assistant_finished_speaking');
    const id = created(c);
    t.same(recordingFiles(id), [`${id}.wav`], 'the call is being recorded');

    t.equal((await http.post(`/v1/conversations/${id}/cancel`)).status, 200, 'canceled');
    t.equal((await http.delete(`/v1/conversations/${id}`)).status, 200, 'its content deleted');
    // The live side learns of the cancel at its next write; it saves its record before it closes the socket.
    c.send({ type: 'set_external_id', external_id: 'after-delete' });
    await c.closed;

    const conv = (await http.get(`/v1/conversations/${id}`)).body.conversation;
    t.equal(conv.ended_by, 'user_canceled', 'the cancel stands');
    t.equal(conv.audio_url, null, 'no recording link');
    t.same(recordingFiles(id), [], 'no recording file left in the recordings directory');
  });
});
