import t from 'tap';
import { OutboundBatch, OutboundStream, type OutboundOptions } from '../../src/media/outbound.js';
import { alawDecodeInto, mulawDecodeInto, mulawEncodeInto } from '../../src/media/native/g711.js';
import { Resampler } from '../../src/media/native/resampler.js';
import { createRtpPacketView, decodeView, payloadOf } from '../../src/media/rtp.js';
import { createTelephoneEvent, dtmfDigit, readTelephoneEvent } from '../../src/media/rfc4733.js';
import { PacingClock, type TimerApi } from '../../src/media/pacing-clock.js';
import { loadPrompt } from './speech.js';

function upsample(pcm8k: Int16Array, rate: 16000 | 24000): Int16Array {
  const rs = new Resampler(8000, rate, 160);
  const out: number[] = [];
  const buf = new Int16Array(rs.maxOutput(160));
  for (let i = 0; i + 160 <= pcm8k.length; i += 160) {
    const n = rs.process(pcm8k.subarray(i, i + 160), buf);
    for (let k = 0; k < n; k++) out.push(buf[k]);
  }
  rs.destroy();
  return Int16Array.from(out);
}

function capture(opts: Omit<OutboundOptions, 'send'>) {
  const packets: Uint8Array[] = [];
  const stream = new OutboundStream({ ...opts, send: (p, n) => packets.push(p.slice(0, n)) });
  return { stream, packets };
}

const v = createRtpPacketView();

t.test('speed 1, no noise: packets carry exactly the resampled, encoded engine audio; RTP continuous', async (t) => {
  const speech16 = upsample(loadPrompt('vm-goodbye'), 16000);
  const { stream, packets } = capture({
    engineRate: 16000,
    wireFormat: 'mulaw_8000',
    payloadType: 0,
    rtp: { ssrc: 9, initialSequence: 65530, initialTimestamp: 4294967000 },
  });
  t.equal(stream.enqueue(speech16), speech16.length);
  const frames = speech16.length / 320;
  for (let i = 0; i < frames + 5; i++) stream.tick();
  t.equal(packets.length, frames + 5, 'one packet per tick, silence after the audio');
  t.equal(stream.playedSamples, speech16.length);

  // Reference: resample 16k -> 8k and encode, frame by frame.
  const rs = new Resampler(16000, 8000, 320);
  const pcm8 = new Int16Array(rs.maxOutput(320));
  const ref = new Uint8Array(160);
  let same = 0;
  for (let i = 0; i < frames; i++) {
    const n = rs.process(speech16.subarray(i * 320, i * 320 + 320), pcm8);
    mulawEncodeInto(pcm8.subarray(0, n), ref);
    decodeView(packets[i], v);
    if (Buffer.compare(Buffer.from(payloadOf(packets[i], v)), Buffer.from(ref)) === 0) same++;
  }
  rs.destroy();
  t.equal(same, frames, 'every payload identical to the reference');
  for (let i = 0; i < packets.length; i++) {
    decodeView(packets[i], v);
    t.equal(v.sequenceNumber, (65530 + i) & 0xffff);
    t.equal(v.timestamp, (4294967000 + i * 160) >>> 0);
    t.equal(v.marker, i === 0);
    if (v.sequenceNumber !== ((65530 + i) & 0xffff)) break;
  }
  decodeView(packets[packets.length - 1], v);
  t.ok(
    payloadOf(packets[packets.length - 1], v).every((b) => b === 0xff),
    'mu-law silence after the audio',
  );
  stream.destroy();
});

t.test('OutboundBatch: one native call per codec group gives the same packets as each stream alone', async (t) => {
  const speech = loadPrompt('vm-goodbye');
  const speech16 = upsample(speech, 16000);
  const speech24 = upsample(speech, 24000);
  const configs: Omit<OutboundOptions, 'send'>[] = [
    {
      engineRate: 16000,
      wireFormat: 'mulaw_8000',
      payloadType: 0,
      rtp: { ssrc: 1, initialSequence: 1, initialTimestamp: 1 },
    },
    {
      engineRate: 24000,
      wireFormat: 'alaw_8000',
      payloadType: 8,
      rtp: { ssrc: 2, initialSequence: 1, initialTimestamp: 1 },
    },
    {
      engineRate: 8000,
      wireFormat: 'mulaw_8000',
      payloadType: 0,
      rtp: { ssrc: 3, initialSequence: 1, initialTimestamp: 1 },
    },
    {
      engineRate: 24000,
      wireFormat: 'mulaw_8000',
      payloadType: 0,
      rtp: { ssrc: 4, initialSequence: 1, initialTimestamp: 1 },
    },
  ];
  const input = (rate: number) => (rate === 16000 ? speech16 : rate === 24000 ? speech24 : speech);
  const alone = configs.map((c) => capture(c));
  const batched = configs.map((c) => capture(c));
  const batch = new OutboundBatch();
  for (const b of batched) batch.add(b.stream);
  alone.forEach((a, i) => a.stream.enqueue(input(configs[i].engineRate)));
  batched.forEach((b, i) => b.stream.enqueue(input(configs[i].engineRate)));
  const ticks = Math.ceil(speech.length / 160) + 3;
  for (let k = 0; k < ticks; k++) {
    for (const a of alone) a.stream.tick();
    batch.tick();
  }
  for (let i = 0; i < configs.length; i++) {
    t.equal(batched[i].packets.length, ticks);
    t.same(
      batched[i].packets,
      alone[i].packets,
      `stream ${i} (${configs[i].engineRate} Hz -> ${configs[i].wireFormat}) identical`,
    );
  }
  // A-law stream decodes back to speech-like audio (not silence).
  decodeView(batched[1].packets[10], v);
  const pcm = new Int16Array(160);
  alawDecodeInto(payloadOf(batched[1].packets[10], v), pcm);
  t.ok(
    pcm.some((s) => Math.abs(s) > 100),
    'a-law payload carries the speech',
  );
  batch.remove(batched[0].stream);
  batch.tick();
  t.equal(batched[0].packets.length, ticks, 'removed stream no longer ticked');
  t.equal(batched[1].packets.length, ticks + 1);
  for (const x of [...alone, ...batched]) x.stream.destroy();
});

t.test('audio_speed 1.5 plays the same audio in two thirds of the ticks', async (t) => {
  const speech16 = upsample(loadPrompt('vm-goodbye'), 16000);
  const { stream, packets } = capture({ engineRate: 16000, wireFormat: 'mulaw_8000', payloadType: 0, speed: 1.5 });
  stream.enqueue(speech16);
  const frames = speech16.length / 320;
  let ticks = 0;
  while (stream.queuedMs > 0 && ticks < frames * 2) {
    stream.tick();
    ticks++;
  }
  t.ok(Math.abs(ticks - frames / 1.5) <= 4, `${ticks} ticks for ${frames} frames of audio at 1.5x`);
  t.equal(stream.playedSamples, speech16.length, 'all audio consumed');
  t.equal(packets.length, ticks);
  stream.destroy();
});

t.test('background noise is sent under silence at the level asked', async (t) => {
  const rms = (packets: Uint8Array[]) => {
    const pcm = new Int16Array(160);
    let s = 0;
    let n = 0;
    for (const p of packets) {
      decodeView(p, v);
      mulawDecodeInto(payloadOf(p, v), pcm);
      for (const x of pcm) s += x * x;
      n += 160;
    }
    return Math.sqrt(s / n);
  };
  const quiet = capture({
    engineRate: 16000,
    wireFormat: 'mulaw_8000',
    payloadType: 0,
    noise: { bed: 'office', level: 0 },
  });
  const half = capture({
    engineRate: 16000,
    wireFormat: 'mulaw_8000',
    payloadType: 0,
    noise: { bed: 'office', level: 0.5 },
  });
  const full = capture({
    engineRate: 16000,
    wireFormat: 'mulaw_8000',
    payloadType: 0,
    noise: { bed: 'office', level: 1 },
  });
  for (let i = 0; i < 100; i++) for (const c of [quiet, half, full]) c.stream.tick();
  t.equal(rms(quiet.packets), 0, 'level 0: silence');
  t.ok(rms(full.packets) > 1000, `level 1: audible bed (${rms(full.packets).toFixed(0)} RMS)`);
  const ratio = rms(half.packets) / rms(full.packets);
  t.ok(ratio > 0.35 && ratio < 0.65, `level 0.5 about half (${ratio.toFixed(2)}; different loop offsets)`);
  for (const c of [quiet, half, full]) c.stream.destroy();
});

t.test('DTMF replaces audio while it plays, timestamps stay continuous, audio resumes where it paused', async (t) => {
  const { stream, packets } = capture({
    engineRate: 8000,
    wireFormat: 'mulaw_8000',
    payloadType: 0,
    telephoneEventPayloadType: 101,
    rtp: { ssrc: 1, initialSequence: 0, initialTimestamp: 0 },
  });
  const tone = new Int16Array(160 * 20).fill(3000);
  stream.enqueue(tone);
  stream.tick();
  stream.tick();
  stream.sendDtmf('5', 60);
  for (let i = 0; i < 10; i++) stream.tick();
  const ev = createTelephoneEvent();
  const kinds = packets.map((p) => {
    decodeView(p, v);
    if (v.payloadType !== 101) return `a${v.timestamp}`;
    readTelephoneEvent(p, v.payloadOffset, v.payloadLength, ev);
    return `${dtmfDigit(ev.event)}${ev.end ? 'E' : ''}@${v.timestamp}`;
  });
  // 60 ms digit: updates at 20 and 40 ms, the end packet (60 ms) three times; the stream clock runs on.
  t.same(kinds, [
    'a0',
    'a160',
    '5@320',
    '5@320',
    '5E@320',
    '5E@320',
    '5E@320',
    'a1120',
    'a1280',
    'a1440',
    'a1600',
    'a1760',
  ]);
  t.equal(stream.playedSamples, 7 * 160, 'no audio consumed while the digit played');
  t.throws(() => capture({ engineRate: 8000, wireFormat: 'mulaw_8000', payloadType: 0 }).stream.sendDtmf('1'));
  stream.destroy();
});

t.test('barge-in: clear() drops queued audio at once; enqueue is bounded by the queue', async (t) => {
  const { stream, packets } = capture({ engineRate: 8000, wireFormat: 'mulaw_8000', payloadType: 0, queueMs: 1000 });
  t.equal(stream.enqueue(new Int16Array(16000).fill(2000)), 8000, 'a 1 s queue takes 1 s');
  stream.tick();
  t.equal(stream.clear(), 8000 - 160);
  stream.tick();
  decodeView(packets[1], v);
  t.ok(
    payloadOf(packets[1], v).every((b) => b === 0xff),
    'silence on the very next tick',
  );
  stream.destroy();
});

t.test('on the pacing clock: one participant drives every stream (injected clock)', async (t) => {
  let now = 0;
  let pending: (() => void) | undefined;
  let at = 0;
  const timers: TimerApi = {
    set: (fn, ms) => ((pending = fn), (at = now + ms), fn),
    clear: () => (pending = undefined),
  };
  const clock = new PacingClock({ now: () => now, timers });
  const batch = new OutboundBatch();
  const streams = Array.from({ length: 5 }, () =>
    capture({ engineRate: 16000, wireFormat: 'mulaw_8000', payloadType: 0 }),
  );
  for (const s of streams) batch.add(s.stream);
  clock.register(batch);
  for (now = 0; now <= 1000; now++) {
    if (pending && now >= at) {
      const fn = pending;
      pending = undefined;
      fn();
    }
  }
  clock.unregister(batch);
  t.ok(
    streams.every((s) => s.packets.length === 50),
    '50 packets per stream per second',
  );
  for (const s of streams) s.stream.destroy();
});

t.test('time-stretch tail: played out at once after markEndOfAudio, or after three dry ticks', async (t) => {
  const tone = new Int16Array(8000);
  for (let i = 0; i < tone.length; i++) tone[i] = Math.round(8000 * Math.sin((2 * Math.PI * 200 * i) / 8000));
  const lastLoudTick = (mark: boolean) => {
    const { stream, packets } = capture({ engineRate: 8000, wireFormat: 'mulaw_8000', payloadType: 0, speed: 1.25 });
    stream.enqueue(tone);
    if (mark) stream.markEndOfAudio();
    for (let i = 0; i < 60; i++) stream.tick();
    let last = -1;
    packets.forEach((p, i) => {
      decodeView(p, v);
      if (payloadOf(p, v).some((b) => (b & 0x7f) < 0x50)) last = i;
    });
    stream.destroy();
    return last;
  };
  const marked = lastLoudTick(true);
  const unmarked = lastLoudTick(false);
  // 1 s at 1.25x = 40 ticks of audio.
  t.ok(Math.abs(marked - 39) <= 2, `marked: audio ends on tick ${marked}`);
  t.ok(unmarked > marked && unmarked - marked <= 3, `unmarked: the tail waits for the dry ticks (${unmarked})`);
});
