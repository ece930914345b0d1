// A slow client over a real socket (docs/sts-protocol.md, "Backpressure"): a raw TCP client that opens the STS
// WebSocket, asks for speech and then stops reading. What the server holds for it stays under the audio
// high-water mark (assistant audio is refused there, not queued in the socket), and a normal conversation on the
// same worker keeps getting its audio on schedule, counted in its own client's 20 ms frames.
import t from 'tap';
import { BACKPRESSURE } from '../../src/realtime/sink.js';
import type { SocketInspection } from '../../src/workers/worker-protocol.js';
import { FRAME_MS, startRealtimeServer } from '../helpers/realtime.js';
import { RawClient, resumeReading, SLOW_FORMAT, SLOW_FRAME_EVENT_BYTES, speakUnread } from './raw-client.js';

t.setTimeout(240_000);

const NORMAL_RATE = 16_000;
const SHORT_TEXT = 'This conversation keeps its pace while another client has stopped reading.';
/** Inspections of the slow socket while it is backed up. */
const SAMPLES = 25;
/** Slack, in the normal client's frames, for a loaded machine: its frames must arrive within their own count plus this. */
const SCHEDULE_SLACK_FRAMES = 50;

function slowSocket(sockets: SocketInspection[][], id: string): SocketInspection | undefined {
  return sockets.flat().find((s) => s.kind === 'sts' && s.conversationId === id);
}

t.test('a client that stops reading is bounded and does not hold up another conversation', async (t) => {
  const server = await startRealtimeServer({ workers: 1 });
  t.teardown(() => server.close());

  const slow = await RawClient.open(server.pool.port, '/v1/sts/ws', server.auth);
  slow.send({ type: 'config', input_format: 'pcm_16000', output_format: SLOW_FORMAT });
  await slow.until((r) => r.includes('ready_to_start_conversation'));
  let slowId = '';
  await slow.until((r) => {
    slowId = /"conversation_id":"([^"]+)"/.exec(r)?.[1] ?? '';
    return slowId !== '';
  });
  // Wait for the socket to back up past the kernel's buffers: uWS then holds bytes and the audio pauses.
  const inspect = async () => slowSocket(await server.pool.inspect(), slowId);
  const backedUp = await speakUnread(slow, inspect);
  t.ok(backedUp?.audioPaused, 'the slow socket backed up and its assistant audio paused');

  // A normal conversation on the same (only) worker, its client reading and streaming silence at real time.
  const { client: normal } = await server.startConversation({
    input_format: `pcm_${NORMAL_RATE}`,
    output_format: `pcm_${NORMAL_RATE}`,
  });
  let ticks = 0;
  const arrivals: number[] = [];
  normal.ws.on('message', (data: Buffer, binary: boolean) => {
    if (!binary && data.includes('"type":"audio_chunk"')) arrivals.push(ticks);
  });
  let streaming = true;
  const silence = Buffer.alloc((NORMAL_RATE * 2 * FRAME_MS) / 1000).toString('base64');
  const stream = (async () => {
    const start = performance.now();
    while (streaming && normal.ws.readyState === normal.ws.OPEN) {
      normal.send({ type: 'audio_chunk', audio: silence });
      ticks++;
      const wait = start + ticks * FRAME_MS - performance.now();
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    }
  })();

  normal.send({ type: 'say', text: SHORT_TEXT });
  const sampled: SocketInspection[] = [];
  const sampling = (async () => {
    for (let i = 0; i < SAMPLES; i++) {
      const s = await inspect();
      if (s) sampled.push(s);
      await new Promise((r) => setTimeout(r, 100));
    }
  })();
  await normal.untilEvent('assistant_finished_speaking');
  await sampling;
  streaming = false;
  await stream;

  const bound = BACKPRESSURE.audio_high_water_bytes + 2 * SLOW_FRAME_EVENT_BYTES;
  t.equal(sampled.length, SAMPLES, 'the slow socket stayed open throughout');
  const most = Math.max(...sampled.map((s) => s.bufferedBytes));
  t.ok(
    sampled.length > 0 && most <= bound,
    `the server held at most ${most} bytes for it (high-water mark ${BACKPRESSURE.audio_high_water_bytes} plus a frame)`,
  );
  t.ok(
    sampled.every((s) => s.audioPaused),
    'its audio stayed paused while it did not read',
  );

  t.same(normal.events('error'), [], 'the normal conversation saw no error');
  t.ok(arrivals.length > 0, `the normal client heard its assistant (${arrivals.length} frames)`);
  const span = arrivals[arrivals.length - 1] - arrivals[0] + 1;
  t.ok(
    span <= arrivals.length + SCHEDULE_SLACK_FRAMES,
    `its ${arrivals.length} frames arrived within ${span} of its own 20 ms frames (on schedule: at most ${arrivals.length + SCHEDULE_SLACK_FRAMES})`,
  );

  // Reading again, the slow client drains and its audio resumes.
  const resumed = await resumeReading(slow, inspect);
  t.equal(resumed?.audioPaused, false, 'once it reads again, its audio resumes');
  normal.close();
  slow.socket.destroy();
});
