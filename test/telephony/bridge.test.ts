// A transfer's second leg on its own (src/telephony/bridge.ts), against a real RTP peer on 127.0.0.1: bridged to a
// target answering PCMA while the caller talks PCMU, the caller's tone reaches the target as A-law and the target's
// reaches the caller as µ-law; the tool's digits go first as RFC 4733 events; the target's audio is readable as
// 20 ms frames (the answering-machine detector's input), and that sequence ends when the leg closes.
import dgram from 'node:dgram';
import t, { type Test } from 'tap';
import { alawDecodeInto, alawEncodeInto, mulawDecodeInto, mulawEncodeInto } from '../../src/media/native/g711.js';
import { dtmfDigit } from '../../src/media/rfc4733.js';
import { createRtpPacketView, decodeView, RtpSender, RTP_HEADER_BYTES } from '../../src/media/rtp.js';
import { NativeUdpGroup } from '../../src/media/udp-native.js';
import { TransferLeg } from '../../src/telephony/bridge.js';
import { until } from '../helpers/wait.js';
import { LOOPBACK, media, PT_EVENT, PT_PCMA } from './harness.js';
import { toneShare } from './transfer-node.js';

const tone = (hz: number, n: number, from: number) =>
  Int16Array.from({ length: n }, (_, i) => Math.round(8000 * Math.sin((2 * Math.PI * hz * (from + i)) / 8000)));

/** A PCMU leg on a free even port of its own UDP group, and a peer socket collecting what the leg sends it. */
async function legAndPeer(
  t: Test,
): Promise<{ group: NativeUdpGroup; leg: TransferLeg | null; peer: dgram.Socket; received: Buffer[] }> {
  const group = new NativeUdpGroup(8);
  const peer = dgram.createSocket('udp4');
  await new Promise<void>((r) => peer.bind(0, LOOPBACK, r));
  const received: Buffer[] = [];
  peer.on('message', (m) => received.push(m));
  let leg: TransferLeg | null = null;
  for (let attempt = 0; attempt < 20 && leg === null; attempt++) {
    try {
      leg = TransferLeg.open(
        group,
        LOOPBACK,
        20000 + 2 * Math.floor(Math.random() * 15000),
        'PCMU',
        () => performance.now(),
        () => undefined,
      );
    } catch {
      // taken: another port
    }
  }
  t.teardown(() => {
    leg?.close();
    peer.close();
    group.close();
  });
  return { group, leg, peer, received };
}

t.test("bridged across µ-law and A-law, digits first, the target's frames readable", async (t) => {
  const { group, leg, peer, received } = await legAndPeer(t);
  t.ok(leg, 'the leg bound a port pair');
  leg!.bridge({ address: LOOPBACK, port: peer.address().port }, media('PCMA'), '5#', false);
  t.ok(leg!.sendsDigits);
  const frames: Int16Array[] = [];
  const reading = (async () => {
    for await (const f of leg!.targetFrames()) frames.push(Int16Array.from(f));
  })();

  const ids = new Uint32Array(4);
  const counts = new Uint32Array(4);
  const sent = new Uint32Array(4);
  const toCaller: Int16Array[] = [];
  const sender = new RtpSender({ payloadType: PT_PCMA });
  const alaw = new Uint8Array(160);
  const packet = new Uint8Array(RTP_HEADER_BYTES + 160);
  const mulaw = new Uint8Array(160);
  for (let i = 0; i < 60; i++) {
    // The caller's 440 Hz (µ-law), the target's 1000 Hz (A-law on the wire), one frame each per clock frame.
    mulawEncodeInto(tone(440, 160, i * 160), mulaw);
    leg!.fromCaller(mulaw, 0, 160);
    alawEncodeInto(tone(1000, 160, i * 160), alaw);
    packet.set(alaw, RTP_HEADER_BYTES);
    sender.writeNext(packet, i === 0);
    sender.advanceTimestamp(160);
    peer.send(packet, leg!.rtpPort, LOOPBACK);
    await new Promise((r) => setTimeout(r, 5));
    const out = leg!.frame(null);
    const pcm = new Int16Array(160);
    mulawDecodeInto(out, pcm);
    toCaller.push(pcm);
    const n = leg!.endpoint.collect(ids, counts, 0);
    if (n > 0) group.sendMany(ids, counts, sent, n);
  }
  await until(() => received.length >= 55, { what: "the leg's packets at the peer" });
  const view = createRtpPacketView();
  const digits: string[] = [];
  let lastTs = -1;
  const audio: Int16Array[] = [];
  const audioTypes = new Set<number>();
  for (const p of received) {
    if (decodeView(p, view, p.length) !== 'ok') continue;
    if (view.payloadType === PT_EVENT) {
      if (view.timestamp !== lastTs) digits.push(dtmfDigit(p[view.payloadOffset]!) ?? '?');
      lastTs = view.timestamp;
    } else {
      audioTypes.add(view.payloadType);
      const pcm = new Int16Array(160);
      alawDecodeInto(p.subarray(view.payloadOffset), pcm);
      audio.push(pcm);
    }
  }
  t.same(digits, ['5', '#'], 'the digits first, as RFC 4733 events');
  t.same([...audioTypes], [PT_PCMA], 'audio to the target is A-law');
  const atTarget = Int16Array.from(audio.slice(-20).flatMap((f) => [...f]));
  t.ok(toneShare(atTarget, 440) > 0.9, `the target hears the caller's tone (${toneShare(atTarget, 440).toFixed(2)})`);
  const atCaller = Int16Array.from(toCaller.slice(-20).flatMap((f) => [...f]));
  t.ok(toneShare(atCaller, 1000) > 0.9, `the caller hears the target's tone (${toneShare(atCaller, 1000).toFixed(2)})`);
  t.ok(
    leg!.counters.relayedToCaller > 40 && leg!.counters.relayedToTarget > 40,
    `frames relayed ${JSON.stringify(leg!.counters)}`,
  );
  leg!.close();
  await reading;
  t.ok(frames.length >= 16, `the target's audio read as frames (${frames.length})`);
  t.ok(
    frames.every((f) => f.length === 160),
    '20 ms each',
  );
  t.ok(toneShare(Int16Array.from(frames.slice(-8).flatMap((f) => [...f])), 1000) > 0.9, "decoded: the target's tone");
});

t.test('listening: the agent hears both parties mixed, and both hear the agent', async (t) => {
  const { group, leg, peer, received } = await legAndPeer(t);
  leg!.bridge({ address: LOOPBACK, port: peer.address().port }, media('PCMU'), null, true);
  const ids = new Uint32Array(4);
  const counts = new Uint32Array(4);
  const sent = new Uint32Array(4);
  const sender = new RtpSender({ payloadType: 0 });
  const packet = new Uint8Array(RTP_HEADER_BYTES + 160);
  const mulaw = new Uint8Array(160);
  const agentHeard: Int16Array[] = [];
  const callerHeard: Int16Array[] = [];
  for (let i = 0; i < 40; i++) {
    mulawEncodeInto(tone(440, 160, i * 160), mulaw);
    leg!.fromCaller(mulaw, 0, 160);
    mulawEncodeInto(tone(1000, 160, i * 160), packet.subarray(RTP_HEADER_BYTES));
    sender.writeNext(packet, i === 0);
    sender.advanceTimestamp(160);
    peer.send(packet, leg!.rtpPort, LOOPBACK);
    await new Promise((r) => setTimeout(r, 5));
    // The agent speaks a 2000 Hz line.
    mulawEncodeInto(tone(2000, 160, i * 160), mulaw);
    leg!.fromAgent(mulaw);
    const out = leg!.frame((bytes) => {
      const pcm = new Int16Array(160);
      mulawDecodeInto(bytes, pcm);
      agentHeard.push(pcm);
    });
    const pcm = new Int16Array(160);
    mulawDecodeInto(out, pcm);
    callerHeard.push(pcm);
    const n = leg!.endpoint.collect(ids, counts, 0);
    if (n > 0) group.sendMany(ids, counts, sent, n);
  }
  await until(() => received.length >= 35, { what: "the leg's packets at the peer" });
  const view = createRtpPacketView();
  const targetHeard = Int16Array.from(
    received.slice(-20).flatMap((p) => {
      decodeView(p, view, p.length);
      const pcm = new Int16Array(160);
      mulawDecodeInto(p.subarray(view.payloadOffset), pcm);
      return [...pcm];
    }),
  );
  const last = (frames: Int16Array[]) => Int16Array.from(frames.slice(-20).flatMap((f) => [...f]));
  const share = (pcm: Int16Array, hz: number) => toneShare(pcm, hz).toFixed(2);
  t.ok(
    toneShare(last(agentHeard), 440) > 0.2 && toneShare(last(agentHeard), 1000) > 0.2,
    `the agent hears both parties (440: ${share(last(agentHeard), 440)}, 1000: ${share(last(agentHeard), 1000)})`,
  );
  t.ok(toneShare(last(agentHeard), 2000) < 0.05, 'not itself');
  t.ok(
    toneShare(last(callerHeard), 1000) > 0.2 && toneShare(last(callerHeard), 2000) > 0.2,
    `the caller hears the target and the agent (${share(last(callerHeard), 1000)}, ${share(last(callerHeard), 2000)})`,
  );
  t.ok(
    toneShare(targetHeard, 440) > 0.2 && toneShare(targetHeard, 2000) > 0.2,
    `the target hears the caller and the agent (${share(targetHeard, 440)}, ${share(targetHeard, 2000)})`,
  );
});
