// A whole conversation over the STS WebSocket with the echo engine: a client streams a real
// speech prompt at real time in 20 ms frames and hears it played back; then the record, its items, the analysis
// and the downloadable recording. Timing is asserted as frame counts.
import { readFileSync } from 'node:fs';
import { gunzipSync } from 'node:zlib';
import t from 'tap';
import { soundFile } from '../helpers/debian-packages.js';
import { FRAME_MS, startRealtimeServer, streamAudio, wavPcm } from '../helpers/realtime.js';

const PROMPT = soundFile('tt-weasels');
const RATE = 8000;
const SAMPLES_PER_FRAME = (RATE * FRAME_MS) / 1000;

t.setTimeout(240_000);

function rms(pcm: Int16Array): number {
  let sum = 0;
  for (const s of pcm) sum += s * s;
  return Math.sqrt(sum / Math.max(1, pcm.length));
}

for (const binary of [false, true]) {
  t.test(`echo conversation, ${binary ? 'binary frames' : 'base64 audio_chunk'}`, async (t) => {
    const server = await startRealtimeServer({ env: { PARLEY_RECONNECT_GRACE_SEC: '0' } });
    t.teardown(() => server.close());
    const client = await server.openSts();
    client.send({
      type: 'config',
      input_format: 'pcm_8000',
      output_format: 'pcm_8000',
      binary_audio: binary,
      welcome_message: 'Hello.',
      external_id: `echo-${binary}`,
    });
    await client.untilEvent('conversation_created');
    const id = String(client.events('conversation_created')[0]?.conversation_id);
    t.match(id, /^conv_/, 'conversation_created names the conversation');
    await client.untilEvent('assistant_finished_speaking');
    t.ok(client.events('ready_to_start_conversation').length === 1, 'ready_to_start_conversation once');

    const welcomeEnd = client.got.order.length;
    const prompt = wavPcm(readFileSync(PROMPT));
    // Half a second of silence, the prompt, then silence until the echo has played out.
    const lead = new Int16Array(RATE / 2);
    const speech = new Int16Array(lead.length + prompt.length);
    speech.set(lead);
    speech.set(prompt, lead.length);
    const sent = await streamAudio(client, speech, RATE, {
      binary,
      keepGoing: () => client.events('assistant_finished_speaking').length < 2 && client.got.order.length < 100_000,
    });
    t.ok(sent >= speech.length / SAMPLES_PER_FRAME, 'the whole prompt was streamed');

    const order = client.got.order
      .slice(welcomeEnd)
      .filter((ty) => ty !== 'audio_chunk' && ty !== 'binary' && ty !== 'input_text');
    t.same(
      order,
      ['user_started_speaking', 'user_finished_speaking', 'assistant_started_speaking', 'assistant_finished_speaking'],
      'the turn: user started, user finished, assistant started, assistant finished',
    );

    // The echo: assistant audio frames after the user's turn.
    const after = client.got.order.indexOf('user_finished_speaking', welcomeEnd);
    const echoed: Int16Array[] = [];
    let events = 0;
    let binaries = 0;
    for (let i = 0; i < client.got.order.length; i++) {
      const ty = client.got.order[i];
      if (ty === 'binary') binaries++;
      else events++;
      if (i <= after) continue;
      if (binary && ty === 'binary') {
        const b = client.got.binary[binaries - 1];
        echoed.push(new Int16Array(b.buffer.slice(b.byteOffset, b.byteOffset + b.length)));
      } else if (!binary && ty === 'audio_chunk') {
        const audio = Buffer.from(String(client.got.events[events - 1].audio), 'base64');
        echoed.push(new Int16Array(audio.buffer.slice(audio.byteOffset, audio.byteOffset + audio.length)));
      }
    }
    t.ok(
      echoed.every((f) => f.length === SAMPLES_PER_FRAME),
      'assistant audio comes in 20 ms frames of the output format',
    );
    const promptFrames = Math.ceil(prompt.length / SAMPLES_PER_FRAME);
    t.ok(
      echoed.length >= promptFrames * 0.8,
      `the echo is about as long as the prompt (${echoed.length} frames for ${promptFrames})`,
    );
    t.ok(echoed.length <= promptFrames + 100, 'and not much longer (prebuffer and hangover only)');
    const loud = echoed.filter((f) => rms(f) > 300).length;
    t.ok(loud >= promptFrames * 0.5, `the echo carries the speech (${loud} voiced frames)`);

    client.close();
    const c = await server.endedConversation(id);
    t.equal(c.ended_by, 'user', 'the client hung up: ended_by user');
    t.equal(c.external_id, `echo-${binary}`, 'external_id from config');
    t.equal(c.origin, 'direct', 'origin');
    t.equal(c.input_format, 'pcm_8000', 'input_format from config');
    t.same(
      c.items.map((i: { role: string }) => i.role),
      ['assistant', 'user', 'assistant'],
      'items: welcome, the user turn, the echo',
    );
    t.equal(c.items[0].live_transcript, 'Hello.', 'the welcome item holds its text');
    const userItem = c.items[1];
    t.ok(userItem.duration_ms >= (prompt.length / RATE) * 1000 * 0.7, 'the user item lasts about the prompt');
    t.equal(c.analysis.latencies_ms.length, 1, 'analysis: one answered turn, one latency');
    t.ok(c.analysis.latencies_ms[0] > 0, 'the latency is positive');
    t.equal(c.analysis.interruptions_count, 0, 'analysis: no interruptions');
    t.ok(c.duration_ms > 0, 'duration');
    t.type(c.audio_url, 'string', 'a recording link');
    const rec = await fetch(c.audio_url);
    t.equal(rec.status, 200, 'the recording downloads');
    const body = Buffer.from(await rec.arrayBuffer());
    const wav = body[0] === 0x1f && body[1] === 0x8b ? gunzipSync(body) : body;
    t.equal(wav.toString('ascii', 0, 4), 'RIFF', 'a WAV file');
    t.equal(wav.readUInt16LE(22), 2, 'two channels: user and assistant');
  });
}
