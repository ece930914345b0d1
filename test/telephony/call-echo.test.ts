// A call end to end on the worker side, without SIP: a real RTP peer on 127.0.0.1 streams a recorded prompt as PCMU
// or PCMA into WorkerCalls; the echo engine's reply (the caller's own turn played back) comes back on RTP in an
// unbroken stream; RTCP reports go both ways; a BYE (call_hangup) ends the conversation, its record (with the RTP
// statistics and the recording) is saved, then call_ended is posted.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import wavefile from 'wavefile';
import { Resampler } from '../../src/media/native/resampler.js';
import { OpusCodec } from '../../src/media/opus.js';
import { RECORDINGS_DIR } from '../../src/media/recording.js';
import { createRtpPacketView, decodeView } from '../../src/media/rtp.js';
import { createPeerRtcp, createReportBlock, readCompound, RTCP_SR, writeReport } from '../../src/telephony/rtcp.js';
import { ReceptionStats } from '../../src/telephony/reception-stats.js';
import { loadPrompt } from '../media/speech.js';
import {
  bestCorrelation,
  envelope,
  g711Decode,
  g711Frames,
  harness,
  media,
  notice,
  PeerStream,
  PT_PCMA,
  PT_PCMU,
  startCall,
  TestPeer,
  waitFor,
} from './harness.js';

t.setTimeout(120_000);

const SILENCE_FRAMES = 75; // 1.5 s: the VAD ends the caller's turn (800 ms of silence by default)

for (const codec of ['PCMU', 'PCMA'] as const) {
  t.test(`${codec}: the caller's speech comes back, RTCP both ways, the record carries the stats`, async (t) => {
    const h = harness();
    const peer = await TestPeer.open();
    t.teardown(async () => {
      peer.close();
      await h.close();
    });
    const callId = `echo-${codec}`;
    const { rtpPort } = await startCall(h, peer, { callId, media: media(codec) });
    await waitFor(() => h.conversations[0]?.state === 'ready', 'the conversation to be ready');
    // Before anyone speaks, the stream runs: silence, 20 ms at a time.
    await waitFor(() => peer.rtpIn.length >= 10, 'silence packets');

    const prompt = loadPrompt('call-forwarding');
    const stream = new PeerStream(peer, rtpPort, codec === 'PCMU' ? PT_PCMU : PT_PCMA);
    const frames = [...g711Frames(prompt, codec), ...g711Frames(new Int16Array(SILENCE_FRAMES * 160), codec)];
    await stream.play(frames);
    const promptEnvelope = envelope(prompt);
    const speechFrames = promptEnvelope.filter((e) => e > 500).length;
    // The echo: as much loud audio as the prompt had, then silence again.
    const loud = () => peer.packets().filter((p) => envelope(g711Decode(p.payload, codec))[0] > 500).length;
    await waitFor(() => loud() >= speechFrames * 0.9, 'the echo on RTP');
    const { block, rr } = peerReport(peer, stream.sender.header.ssrc);
    t.ok(block, 'the peer could report on our stream');
    peer.sendRtcp(rr, rtpPort + 1);
    await waitFor(() => loud() >= speechFrames, 'the whole echo');
    // And the quiet end of the prompt after it.
    const total = peer.rtpIn.length;
    await waitFor(() => peer.rtpIn.length >= total + 25, 'the end of the echo');

    const packets = peer.packets();
    t.ok(
      packets.every((p) => p.port === rtpPort),
      'every packet came from the RTP port (symmetric RTP)',
    );
    t.ok(
      packets.every((p) => p.view.payloadType === (codec === 'PCMU' ? PT_PCMU : PT_PCMA)),
      `every packet is ${codec}`,
    );
    t.ok(
      packets.every((p) => p.payload.length === 160),
      'ptime 20: 160 bytes a packet',
    );
    const ssrc = packets[0].view.ssrc;
    let continuous = true;
    for (let i = 1; i < packets.length; i++) {
      const a = packets[i - 1].view;
      const b = packets[i].view;
      if (
        b.ssrc !== ssrc ||
        b.sequenceNumber !== ((a.sequenceNumber + 1) & 0xffff) ||
        b.timestamp !== (a.timestamp + 160) >>> 0
      )
        continuous = false;
    }
    t.ok(continuous, 'one SSRC, sequence numbers and timestamps continuous from the first packet (silence between)');
    t.same(
      packets.map((p, i) => [i, p.view.marker]).filter(([, m]) => m),
      [[0, true]],
      'the marker bit on the first packet only (RFC 3551 4.1: no gap in transmission after it)',
    );

    const heard = new Int16Array(packets.length * 160);
    packets.forEach((p, i) => heard.set(g711Decode(p.payload, codec), i * 160));
    const { r } = bestCorrelation(envelope(heard), promptEnvelope);
    t.ok(r > 0.85, `the echo follows the prompt's energy envelope (r = ${r.toFixed(3)})`);

    // RTCP from Parley: a sender report from our peer's point of view, about the peer's stream.
    await waitFor(() => peer.rtcpIn.length > 0, 'an RTCP report');
    const report = createPeerRtcp();
    const first = peer.rtcpIn[0].data;
    t.equal(first[1], RTCP_SR, 'a sender report first (Parley sends RTP)');
    t.equal(peer.rtcpIn[0].port, rtpPort + 1, 'from the RTCP port');
    readCompound(first, first.length, stream.sender.header.ssrc, report);
    t.ok(report.valid && report.aboutUs, "a valid compound packet with a block about the peer's stream");
    t.equal(report.block.cumulativeLost, 0, 'nothing lost');

    h.calls.handle({ type: 'call_hangup', callId, reason: 'bye' });
    await waitFor(() => notice(h, 'call_ended', callId) !== undefined, 'call_ended');
    t.match(notice(h, 'call_ended', callId), { conversationId: `conv_${callId}`, endedBy: 'user', started: true });
    t.equal(h.savedAtEnd.get(callId), true, 'call_ended only once the record was saved');
    const rec = h.store.only();
    t.equal(rec.conversation.id, `conv_${callId}`);
    t.match(rec.conversation, {
      origin: 'telephony-inbound',
      call_info: { from_phone_number: '+14155550100', telephony_call_sid: callId },
    });
    t.equal(rec.conversation.settings?.input_format, codec === 'PCMU' ? 'mulaw_8000' : 'alaw_8000');
    t.equal(rec.finish?.ended_by, 'user');
    const rtp = rec.finish?.rtp;
    t.match(
      rtp?.inbound,
      { packets_expected: stream.sent, packets_received: stream.sent, packets_lost: 0, loss_fraction: 0 },
      'inbound: every packet of the peer',
    );
    t.ok(
      rtp!.inbound.jitter_ms >= 0 && rtp!.inbound.jitter_ms < 20,
      `inbound jitter measured (${rtp!.inbound.jitter_ms} ms)`,
    );
    t.ok(
      rtp?.outbound && rtp.outbound.packets_expected > 0 && rtp.outbound.packets_lost === 0,
      'outbound: as the peer reported it',
    );
    t.ok(
      rec.items.some((i) => i.role === 'assistant'),
      'the echo is on the record',
    );

    // The recording: the caller on the left, the echo on the right.
    t.equal(rec.recordings.length, 1);
    const path = join(h.dataDir, RECORDINGS_DIR, rec.recordings[0].path);
    t.ok(existsSync(path), 'the recording file exists');
    const w = new wavefile.WaveFile();
    w.fromBuffer(readFileSync(path));
    const [left, right] = w.getSamples(false, Int16Array) as unknown as Int16Array[];
    const energy = (x: Int16Array) => x.reduce((s, y) => s + y * y, 0);
    t.ok(energy(left) > 0 && energy(right) > 0, 'both sides recorded');

    // The ports are closed: they can be bound again.
    t.equal(h.calls.count, 0, 'the call is forgotten');
  });
}

t.test("opus: the caller's speech comes back", async (t) => {
  const h = harness();
  const peer = await TestPeer.open();
  t.teardown(async () => {
    peer.close();
    await h.close();
  });
  const callId = 'echo-opus';
  const { rtpPort } = await startCall(h, peer, { callId, media: media('opus') });
  await waitFor(() => h.conversations[0]?.state === 'ready', 'the conversation to be ready');
  // The prompt (and silence after it) at 48 kHz, one opus packet per 20 ms (RFC 7587: the RTP clock is 48 kHz).
  const prompt = loadPrompt('call-forwarding');
  const padded = new Int16Array(prompt.length + SILENCE_FRAMES * 160);
  padded.set(prompt);
  const up = new Resampler(8000, 48000, padded.length);
  const wide = new Int16Array(up.maxOutput(padded.length));
  const n = up.process(padded, wide);
  up.destroy();
  const encoder = new OpusCodec();
  const frames: Uint8Array[] = [];
  for (let i = 0; i + 960 <= n; i += 960) frames.push(new Uint8Array(encoder.encode(wide.slice(i, i + 960))));
  const stream = new PeerStream(peer, rtpPort, 111);
  await stream.play(frames, undefined, 960);
  // The echo takes as long as the prompt, and the stream runs on after it.
  const total = peer.rtpIn.length;
  await waitFor(() => peer.rtpIn.length >= total + Math.ceil(prompt.length / 160) + 60, 'the echo');
  const decoder = new OpusCodec();
  const pcm = new Int16Array(960 * 6);
  const heard = peer.packets().flatMap((p) => envelope(pcm.subarray(0, decoder.decodeInto(p.payload, pcm)), 960));
  t.ok(
    peer.packets().every((p) => p.view.payloadType === 111),
    'opus packets',
  );
  const ts = peer.packets().map((p) => p.view.timestamp);
  t.ok(
    ts.slice(1).every((x, i) => (x - ts[i]) >>> 0 === 960),
    'timestamps 960 apart (20 ms at 48 kHz)',
  );
  const { r } = bestCorrelation(heard, envelope(prompt));
  t.ok(r > 0.85, `the echo follows the prompt's energy envelope (r = ${r.toFixed(3)})`);
  h.calls.handle({ type: 'call_hangup', callId, reason: 'bye' });
  await waitFor(() => notice(h, 'call_ended', callId) !== undefined, 'call_ended');
  t.equal(h.store.only().conversation.settings?.output_format, 'opus_48000');
  t.equal(h.store.only().finish?.rtp?.inbound.packets_received, frames.length, 'every packet received');
});

/** What the peer received of Parley's stream, as an RR (RFC 3550 6.4.2) with one report block. */
function peerReport(peer: TestPeer, peerSsrc: number) {
  const stats = new ReceptionStats(8000);
  const v = createRtpPacketView();
  for (const d of peer.rtpIn) if (decodeView(d.data, v, d.data.length) === 'ok') stats.update(v, d.atMs);
  const block = createReportBlock();
  const ok = stats.reportInto(block);
  const rr = new Uint8Array(64);
  const n = writeReport(rr, 0, peerSsrc, null, block);
  return { block: ok ? block : null, rr: rr.subarray(0, n) };
}
