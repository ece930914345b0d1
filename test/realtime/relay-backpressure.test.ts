// Backpressure through a relay (docs/sts-protocol.md, "Backpressure": relayed sockets follow the same rules): a
// client reconnects to its conversation on the other worker, asks for speech and stops reading. The worker that
// holds its socket reports the audio marks back to the owner (relay_flow), so the owner stops offering audio and
// the socket stays near the high-water mark, instead of filling up to uWS's drop limit and being cut off.
import t from 'tap';
import { BACKPRESSURE } from '../../src/realtime/sink.js';
import type { SocketInspection } from '../../src/workers/worker-protocol.js';
import { startRealtimeServer } from '../helpers/realtime.js';
import { RawClient, resumeReading, SLOW_FORMAT, SLOW_FRAME_EVENT_BYTES, speakUnread } from './raw-client.js';

t.setTimeout(240_000);

/** Reconnect attempts until one lands on the worker that does not own the conversation (the kernel picks). */
const LANDING_ATTEMPTS = 40;
const SAMPLES = 20;
/** Audio frames already on their way while the pause travels socket worker -> main -> owner, on a loaded machine. */
const IN_FLIGHT_FRAMES = 16;

function relayedSocket(sockets: SocketInspection[][], id: string): SocketInspection | undefined {
  return sockets.flat().find((s) => s.kind === 'sts' && s.relayed && s.conversationId === id);
}

t.test('a relayed client that stops reading is paused like a local one', async (t) => {
  const server = await startRealtimeServer({ workers: 2, env: { PARLEY_RECONNECT_GRACE_SEC: '120' } });
  t.teardown(() => server.close());
  const { client: first, id } = await server.startConversation({
    input_format: 'pcm_16000',
    output_format: SLOW_FORMAT,
  });
  // Dropped, not closed on purpose (that would end the conversation): it waits for the reconnect.
  first.ws.terminate();
  await first.closed;

  let client: RawClient | null = null;
  for (let i = 0; i < LANDING_ATTEMPTS && !client; i++) {
    const before = server.pool.relayed.reconnect;
    const attempt = await RawClient.open(server.pool.port, `/v1/sts/ws?reconnect_conv_id=${id}`, server.auth);
    await attempt.until((r) => r.includes('conversation_created'));
    if (server.pool.relayed.reconnect > before) client = attempt;
    else attempt.socket.destroy();
  }
  if (!client) throw new Error(`no reconnect landed on the other worker in ${LANDING_ATTEMPTS} attempts`);
  const inspect = async () => relayedSocket(await server.pool.inspect(), id);
  const backedUp = await speakUnread(client, inspect);
  t.ok(backedUp?.audioPaused, 'the relayed socket backed up and its audio paused');

  const sampled: SocketInspection[] = [];
  for (let i = 0; i < SAMPLES; i++) {
    const s = await inspect();
    if (s) sampled.push(s);
    await new Promise((r) => setTimeout(r, 100));
  }
  t.equal(sampled.length, SAMPLES, 'the relayed socket stayed open (never cut off at the drop limit)');
  const most = Math.max(...sampled.map((s) => s.bufferedBytes));
  const bound = BACKPRESSURE.audio_high_water_bytes + IN_FLIGHT_FRAMES * SLOW_FRAME_EVENT_BYTES;
  t.ok(
    sampled.length > 0 && most <= bound,
    `its worker held at most ${most} bytes for it (high-water mark plus frames in flight: ${bound})`,
  );

  const resumed = await resumeReading(client, inspect);
  t.equal(resumed?.audioPaused, false, 'once it reads again, its audio resumes');
  client.socket.destroy();
});
