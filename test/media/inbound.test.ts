import t from 'tap';
import { RtpInbound, InboundAudio, type InboundSink } from '../../src/media/inbound.js';
import { mulawEncodeInto, mulawDecodeInto } from '../../src/media/native/g711.js';
import { Resampler } from '../../src/media/native/resampler.js';
import { RtpSender, RTP_HEADER_BYTES } from '../../src/media/rtp.js';
import { TelephoneEventSender } from '../../src/media/rfc4733.js';
import type { DtmfDigit } from '../../src/media/rfc4733.js';
import { concatPcm as concat, loadPrompt } from './speech.js';

const PEER = '192.0.2.10';

function collector() {
  const frames: Int16Array[] = [];
  const concealed: boolean[] = [];
  const digits: DtmfDigit[] = [];
  const sink: InboundSink = {
    onAudio: (f, c) => {
      frames.push(Int16Array.from(f));
      concealed.push(c);
    },
    onDtmf: (d) => digits.push(d),
  };
  return { sink, frames, concealed, digits };
}

/** mu-law RTP packets of a prompt, 20 ms each. */
function packetize(pcm: Int16Array, sender: RtpSender): Uint8Array[] {
  const packets: Uint8Array[] = [];
  const payload = new Uint8Array(160);
  for (let i = 0; i + 160 <= pcm.length; i += 160) {
    mulawEncodeInto(pcm.subarray(i, i + 160), payload);
    const p = new Uint8Array(RTP_HEADER_BYTES + 160);
    sender.writeNext(p, i === 0);
    p.set(payload, RTP_HEADER_BYTES);
    sender.advanceTimestamp(160);
    packets.push(p);
  }
  return packets;
}

t.test(
  'real speech over a reordering network arrives in order at the engine rate, identical to a clean path',
  async (t) => {
    const speech = loadPrompt('vm-goodbye');
    const sender = new RtpSender({ payloadType: 0, ssrc: 77 });
    const packets = packetize(speech, sender);
    const frames = packets.length;
    t.ok(frames > 30, `${frames} packets of speech`);

    // Reference: the same mu-law payloads decoded and resampled in order, without RTP.
    const ref: Int16Array[] = [];
    const rs = new Resampler(8000, 16000, 480);
    const pcm = new Int16Array(160);
    const out = new Int16Array(rs.maxOutput(160));
    for (const p of packets) {
      mulawDecodeInto(p.subarray(RTP_HEADER_BYTES), pcm);
      const n = rs.process(pcm, out);
      ref.push(out.slice(0, n));
    }
    rs.destroy();

    // Network: swap every 7th packet with its successor (from the 4th: on arrival, the first packet starts the
    // stream), duplicate every 11th, 10 ms jitter.
    const order: { p: Uint8Array; at: number }[] = packets.map((p, i) => ({ p, at: i * 20 + 30 + (i % 3) * 5 }));
    for (let i = 3; i + 1 < order.length; i += 7) {
      const a = order[i].at;
      order[i].at = order[i + 1].at;
      order[i + 1].at = a;
    }
    for (let i = 0; i < packets.length; i += 11) order.push({ p: packets[i], at: i * 20 + 60 });
    order.sort((a, b) => a.at - b.at);

    const c = collector();
    const inbound = new RtpInbound({
      format: 'mulaw_8000',
      payloadType: 0,
      telephoneEventPayloadType: 101,
      engineRate: 16000,
      peerAddress: PEER,
      sink: c.sink,
    });
    for (const { p, at } of order) inbound.receive(p, p.length, PEER, 4000, at);
    inbound.poll(frames * 20 + 1000);
    t.equal(c.frames.length, frames, 'one engine frame per packet');
    t.ok(
      c.frames.every((f) => f.length === 320),
      '20 ms at 16 kHz each',
    );
    t.notOk(c.concealed.some(Boolean), 'nothing concealed: reordering was repaired');
    t.same(concat(c.frames), concat(ref), 'bit-identical to the clean path');
    t.ok(inbound.counters.dropped >= Math.floor(frames / 11), `duplicates dropped (${inbound.counters.dropped})`);
    inbound.destroy();
  },
);

t.test(
  'lost packets are concealed at their deadline; DTMF from another port of the peer; strangers ignored',
  async (t) => {
    const speech = loadPrompt('vm-goodbye');
    const sender = new RtpSender({ payloadType: 0, ssrc: 5 });
    const packets = packetize(speech, sender);
    const c = collector();
    const inbound = new RtpInbound({
      format: 'mulaw_8000',
      payloadType: 0,
      telephoneEventPayloadType: 101,
      engineRate: 8000,
      peerAddress: PEER,
      sink: c.sink,
    });
    const lost = new Set([5, 6, 20, 33]);
    let now = 0;
    for (let i = 0; i < packets.length; i++) {
      now = i * 20 + 30;
      if (!lost.has(i)) t.equal(inbound.receive(packets[i], packets[i].length, PEER, 4000, now), 'audio');
      inbound.poll(now);
    }
    inbound.poll(now + 500);
    t.equal(c.frames.length, packets.length, 'a frame for every packet, lost ones included');
    t.same(
      c.concealed.map((x, i) => (x ? i : -1)).filter((i) => i >= 0),
      [...lost],
      'concealed exactly where packets were lost',
    );
    // The concealed frame after a good one is a faded repeat, not silence.
    const rms = (f: Int16Array) => Math.sqrt(f.reduce((s, v) => s + v * v, 0) / f.length);
    if (rms(c.frames[4]) > 100) t.ok(rms(c.frames[5]) > 0, 'first concealed frame carries sound');

    // DTMF from port 4002 of the same peer is accepted; audio from it, or anything from a stranger, is not.
    const dtmfRtp = new RtpSender({ payloadType: 101, ssrc: 5 });
    const tx = new TelephoneEventSender(dtmfRtp, { payloadType: 101, clockRate: 8000, ticksPerPacket: 160 });
    tx.send('42#', 60);
    const buf = new Uint8Array(64);
    while (tx.active) {
      const n = tx.writeTick(buf);
      dtmfRtp.advanceTimestamp(160);
      inbound.receive(buf, n, PEER, 4002, (now += 20));
    }
    t.same(c.digits, ['4', '2', '#'], 'digits once each');
    t.equal(
      inbound.receive(packets[0], packets[0].length, PEER, 4002, now),
      'wrong_source',
      'audio only from the latched port',
    );
    t.equal(inbound.receive(packets[0], packets[0].length, '198.51.100.1', 4000, now), 'wrong_source', 'stranger');
    t.equal(inbound.receive(Uint8Array.from([0x80, 200, 0, 6, 0, 0, 0, 0, 0, 0, 0, 0]), 12, PEER, 4001, now), 'rtcp');
    t.equal(inbound.receive(Uint8Array.from([1, 2, 3]), 3, PEER, 4000, now), 'malformed');
    t.ok(inbound.counters.dtmf_repeat > 0, 'updates and end repeats counted, not reported');
    inbound.destroy();
  },
);

t.test(
  'InboundAudio (STS socket path): little-endian PCM 24 kHz in, 16 kHz engine frames out, VAD hook fed',
  async (t) => {
    const c = collector();
    const fed: number[] = [];
    const vad = { process: (f: Int16Array) => (fed.push(f.length), fed.length === 3 ? 1 : 0) };
    const events: number[] = [];
    const audio = new InboundAudio({
      format: 'pcm_24000',
      engineRate: 16000,
      vad,
      sink: { ...c.sink, onVad: (e) => events.push(e) },
    });
    const bytes = new Uint8Array(960);
    for (let i = 0; i < 480; i++) {
      const v = Math.round(10000 * Math.sin((2 * Math.PI * 440 * i) / 24000));
      bytes[2 * i] = v & 0xff;
      bytes[2 * i + 1] = (v >> 8) & 0xff;
    }
    for (let k = 0; k < 5; k++) audio.pushPayload(bytes, bytes.length);
    t.equal(c.frames.length, 5);
    t.ok(
      c.frames.slice(1).every((f) => f.length === 320),
      '320 samples at 16 kHz per 20 ms',
    );
    t.same(fed.length, 5, 'VAD saw every frame');
    t.same(events, [1], 'VAD events passed to the sink');
    audio.destroy();
  },
);

t.test('InboundAudio without concealment (the STS socket) delivers the same frames; pushLost is refused', async (t) => {
  const withPlc = collector();
  const without = collector();
  const a = new InboundAudio({ format: 'pcm_8000', engineRate: 8000, sink: withPlc.sink });
  const b = new InboundAudio({ format: 'pcm_8000', engineRate: 8000, sink: without.sink, concealment: false });
  const bytes = new Uint8Array(320);
  for (let k = 0; k < 4; k++) {
    for (let i = 0; i < bytes.length; i++) bytes[i] = (i * 31 + k * 7) & 0xff;
    a.pushPayload(bytes, bytes.length);
    b.pushPayload(bytes, bytes.length);
  }
  t.same(without.frames, withPlc.frames, 'frames identical');
  t.same(without.concealed, [false, false, false, false]);
  t.throws(() => b.pushLost(), /without loss concealment/);
  t.equal(without.frames.length, 4, 'nothing delivered by the refused pushLost');
  a.pushLost();
  t.equal(withPlc.concealed.at(-1), true, 'a stream with concealment still conceals');
});

t.test('InboundAudio.pushSamples: PCM samples in place give what pushPayload gives for their bytes', async (t) => {
  for (const [format, engineRate] of [
    ['pcm_8000', 8000],
    ['pcm_24000', 16000],
  ] as const) {
    const viaBytes = collector();
    const inPlace = collector();
    const a = new InboundAudio({ format, engineRate, sink: viaBytes.sink, concealment: false });
    const b = new InboundAudio({ format, engineRate, sink: inPlace.sink, concealment: false });
    t.ok(b.samplesInPlace, `${format}: little-endian PCM on this host`);
    const samples = (format === 'pcm_8000' ? 8000 : 24000) / 50;
    for (let k = 0; k < 4; k++) {
      const frame = new ArrayBuffer(samples * 2 + (k === 3 ? 1 : 0)); // an odd trailing byte is dropped both ways
      const bytes = new Uint8Array(frame);
      for (let i = 0; i < bytes.length; i++) bytes[i] = (i * 57 + k * 13) & 0xff;
      a.pushPayload(bytes, bytes.length);
      b.pushSamples(new Int16Array(frame, 0, frame.byteLength >> 1));
    }
    t.same(inPlace.frames, viaBytes.frames, `${format}: identical frames`);
    t.throws(
      () => b.pushSamples(new Int16Array(b.maxPayloadSamples + 1)),
      RangeError,
      'more than the chain holds is refused',
    );
    a.destroy();
    b.destroy();
  }
  t.notOk(
    new InboundAudio({ format: 'mulaw_8000', engineRate: 8000, sink: collector().sink }).samplesInPlace,
    'mu-law needs decoding',
  );
});
