// The pieces together as a phone call uses them: RTP in -> inbound chain -> an echo "engine" -> outbound chain
// -> RTP out, with both sides recorded, all driven by one pacing clock on an injected time base.
import t from 'tap';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import wavefile from 'wavefile';
import { RtpInbound } from '../../src/media/inbound.js';
import { mulawEncodeInto } from '../../src/media/native/g711.js';
import { OutboundBatch, OutboundStream } from '../../src/media/outbound.js';
import { PacingClock, type TimerApi } from '../../src/media/pacing-clock.js';
import { StereoRecorder } from '../../src/media/recording.js';
import { createRtpPacketView, decodeView, RtpSender, RTP_HEADER_BYTES } from '../../src/media/rtp.js';
import { loadPrompt } from './speech.js';

t.test('echo call: caller speech comes back on the wire and both sides land in the recording', async (t) => {
  const dir = t.testdir({});
  const speech = loadPrompt('vm-goodbye');
  let now = 0;
  let due: { fn: () => void; at: number } | undefined;
  const timers: TimerApi = { set: (fn, ms) => (due = { fn, at: now + ms }), clear: () => (due = undefined) };
  const clock = new PacingClock({ now: () => now, timers });
  const recorder = await StereoRecorder.open(join(dir, 'call.wav'), { sampleRate: 16000 });
  const sent: Uint8Array[] = [];
  const outbound = new OutboundStream({
    engineRate: 16000,
    wireFormat: 'mulaw_8000',
    payloadType: 0,
    send: (p, n) => sent.push(p.slice(0, n)),
    onPlayedFrame: (f) => recorder.writeAssistant(f),
  });
  let heard = 0;
  const inbound = new RtpInbound({
    format: 'mulaw_8000',
    payloadType: 0,
    engineRate: 16000,
    peerAddress: '127.0.0.1',
    sink: {
      onAudio: (frame) => {
        heard++;
        recorder.writeUser(frame);
        outbound.enqueue(frame); // the echo engine: says back what it heard
      },
    },
  });
  const batch = new OutboundBatch();
  batch.add(outbound);
  clock.register(batch);
  clock.register({ tick: () => recorder.tick() });

  const caller = new RtpSender({ payloadType: 0, ssrc: 321 });
  const pkt = new Uint8Array(RTP_HEADER_BYTES + 160);
  const frames = Math.floor(speech.length / 160);
  const totalMs = (frames + 25) * 20;
  let k = 0;
  for (now = 0; now <= totalMs; now++) {
    // The caller sends a packet every 20 ms, 5 ms into each period.
    if (now % 20 === 5 && k < frames) {
      caller.writeNext(pkt, k === 0);
      mulawEncodeInto(speech.subarray(k * 160, k * 160 + 160), pkt.subarray(RTP_HEADER_BYTES));
      caller.advanceTimestamp(160);
      inbound.receive(pkt, pkt.length, '127.0.0.1', 40000, now);
      k++;
    }
    if (due && now >= due.at) {
      const d = due;
      due = undefined;
      d.fn();
    }
  }
  clock.stop();
  t.equal(heard, frames, 'every caller frame reached the engine');
  t.ok(sent.length >= totalMs / 20 - 2, `a packet per tick went out (${sent.length})`);
  const v = createRtpPacketView();
  const loud = sent.filter(
    (p) => decodeView(p, v) === 'ok' && p.subarray(v.payloadOffset).some((b) => (b & 0x7f) < 0x60),
  ).length;
  t.ok(loud >= frames * 0.5, `the echoed speech is on the wire (${loud} loud packets)`);
  const res = await recorder.finish();
  const w = new wavefile.WaveFile();
  w.fromBuffer(readFileSync(res.path));
  const [left, right] = w.getSamples(false, Int16Array) as unknown as Int16Array[];
  const energy = (x: Int16Array) => x.reduce((s, y) => s + y * y, 0);
  t.equal(left.length, res.frames * 320, 'recording as long as the call');
  t.ok(energy(left) > 0 && energy(right) > 0, 'both sides recorded');
  t.ok(energy(right) > energy(left) * 0.5 && energy(right) < energy(left) * 2, "the echo has the caller's loudness");
  inbound.destroy();
  outbound.destroy();
});
