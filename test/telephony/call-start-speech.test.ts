// A caller who speaks from the very first RTP packet, while the conversation is still starting (its configuration
// endpoint has not answered yet): nothing of it is lost. The audio that came before the conversation was live is on
// the recording and makes the caller's turn, whose echo comes back as long as the prompt's speech.
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { join } from 'node:path';
import t from 'tap';
import wavefile from 'wavefile';
import { RECORDINGS_DIR } from '../../src/media/recording.js';
import { loadPrompt } from '../media/speech.js';
import {
  envelope,
  g711Decode,
  g711Frames,
  harness,
  media,
  notice,
  PeerStream,
  PT_PCMU,
  startCall,
  TestPeer,
  waitFor,
} from './harness.js';

t.setTimeout(120_000);

const LOUD_RMS = 500;
/** Packets of speech sent before the configuration endpoint answers: 600 ms. */
const EARLY_PACKETS = 30;
const SILENCE_FRAMES = 75;

t.test("speech from the first packet, before the conversation is live: recorded, and the caller's turn", async (t) => {
  const h = harness();
  const peer = await TestPeer.open();
  let stream: PeerStream | null = null;
  // The configuration endpoint answers once the caller has spoken for EARLY_PACKETS packets.
  const server = createServer((req, res) => {
    req.resume();
    void waitFor(() => (stream?.sent ?? 0) >= EARLY_PACKETS, 'the early speech').then(() =>
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}'),
    );
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.teardown(async () => {
    peer.close();
    await h.close();
    server.close();
  });
  const port = (server.address() as { port: number }).port;
  const callId = 'start-speech';
  const full = loadPrompt('call-forwarding');
  // The prompt from its first loud frame: speech in the very first packet.
  const prompt = full.subarray(envelope(full).findIndex((e) => e > LOUD_RMS) * 160);
  const { rtpPort } = await startCall(h, peer, {
    callId,
    media: media('PCMU'),
    configurationEndpoint: { url: `http://127.0.0.1:${port}/config`, timeout_ms: 10_000 },
  });
  stream = new PeerStream(peer, rtpPort, PT_PCMU);
  const played = stream.play([
    ...g711Frames(prompt, 'PCMU'),
    ...g711Frames(new Int16Array(SILENCE_FRAMES * 160), 'PCMU'),
  ]);
  await waitFor(() => stream!.sent >= EARLY_PACKETS, 'the early speech sent');
  t.not(h.conversations[0]?.state, 'active', 'the first packets came while the conversation was starting');
  await played;

  const speechFrames = envelope(prompt).filter((e) => e > LOUD_RMS).length;
  const loud = () => peer.packets().filter((p) => envelope(g711Decode(p.payload, 'PCMU'))[0] > LOUD_RMS).length;
  await waitFor(() => loud() >= speechFrames * 0.9, `the echo of the caller's turn (${speechFrames} loud frames)`);
  h.calls.handle({ type: 'call_hangup', callId, reason: 'bye' });
  await waitFor(() => notice(h, 'call_ended', callId) !== undefined, 'call_ended');

  const rec = h.store.only();
  const users = rec.items.filter((i) => i.role === 'user');
  t.equal(users.length, 1, 'one user turn');
  t.ok(
    rec.items.some((i) => i.role === 'assistant'),
    'answered',
  );
  // The recording's caller side holds all of the prompt's speech (its rate is the engine's: frames of 20 ms).
  const w = new wavefile.WaveFile();
  w.fromBuffer(readFileSync(join(h.dataDir, RECORDINGS_DIR, rec.recordings[0].path)));
  const rate = (w.fmt as { sampleRate: number }).sampleRate;
  const [left] = w.getSamples(false, Int16Array) as unknown as Int16Array[];
  const recordedLoud = envelope(left, rate / 50).filter((e) => e > LOUD_RMS).length;
  t.ok(
    recordedLoud >= speechFrames,
    `the recording holds the caller's speech (${recordedLoud} loud frames of ${speechFrames})`,
  );
  t.equal(h.lost[0], 0, 'nothing lost on the way');
});
