// The call's RTP streams under the conditions of a real network and a real peer: a lost packet is concealed and a
// reordered pair is put back in order before the conversation hears them; packets from another source after the
// latch are dropped; hold stops Parley's stream (and the inactivity timeout), resume restarts it with the marker bit
// and the media clock's timestamps; RTP inactivity ends the call with ended_by error.
import dgram from 'node:dgram';
import t from 'tap';
import {
  g711Frames,
  harness,
  LOOPBACK,
  media,
  notice,
  PeerStream,
  PT_PCMU,
  sleep,
  startCall,
  TestPeer,
  waitFor,
} from './harness.js';

t.setTimeout(120_000);

const silence = (frames: number) => g711Frames(new Int16Array(frames * 160), 'PCMU');

t.test(
  'a lost packet is concealed, a reordered pair reordered, a stranger dropped; the record counts the loss',
  async (t) => {
    const h = harness();
    const peer = await TestPeer.open();
    t.teardown(async () => {
      peer.close();
      await h.close();
    });
    const callId = 'loss';
    const { rtpPort } = await startCall(h, peer, { callId });
    await waitFor(() => h.conversations[0]?.state === 'ready', 'ready');
    const stream = new PeerStream(peer, rtpPort, PT_PCMU);
    // Each payload is recognisable by its bytes: 0x20 + its index.
    const N = 40;
    const payloads = Array.from({ length: N }, (_, i) => new Uint8Array(160).fill(0x20 + i));
    // Packet 10 never comes; 21 and 20 come in that order, back to back.
    await stream.play(payloads, (p) =>
      p.map((pkt, i) => (i === 10 || i === 21 ? null : i === 20 ? [p[21]!, p[20]!] : pkt)),
    );
    // Another source, after the latch: not the peer (symmetric RTP).
    const stranger = dgram.createSocket('udp4');
    await new Promise<void>((r) => stranger.bind(0, LOOPBACK, r));
    stranger.send(stream.packet(new Uint8Array(160).fill(0x7e)), rtpPort, LOOPBACK);
    await sleep(100);
    stranger.close();
    await waitFor(() => h.firstBytes[0].length >= N - 1, 'every packet heard');
    const expected = Array.from({ length: N }, (_, i) => 0x20 + i).filter((b) => b !== 0x20 + 10);
    t.same(h.firstBytes[0], expected, 'in sequence order, the lost one missing, nothing from the stranger');
    t.equal(h.lost[0], 1, 'the lost packet was concealed (one 20 ms frame)');
    t.equal(h.calls.session(callId)?.counters.wrongSource, 1, 'the stranger counted');
    h.calls.handle({ type: 'call_hangup', callId, reason: 'bye' });
    await waitFor(() => h.store.only().finish !== null, 'the record');
    t.match(h.store.only().finish?.rtp?.inbound, {
      packets_expected: N,
      packets_received: N - 1,
      packets_lost: 1,
      loss_fraction: 1 / N,
    });
  },
);

t.test(
  "a stranger sending first to the call's port does not take its audio: the signalled peer is latched",
  async (t) => {
    const h = harness();
    const peer = await TestPeer.open();
    const stranger = dgram.createSocket('udp4');
    await new Promise<void>((r) => stranger.bind(0, '127.0.0.2', r));
    const toStranger: Buffer[] = [];
    stranger.on('message', (m) => toStranger.push(m));
    t.teardown(async () => {
      stranger.close();
      peer.close();
      await h.close();
    });
    const callId = 'stranger-first';
    const { rtpPort } = await startCall(h, peer, { callId });
    await waitFor(() => h.conversations[0]?.state === 'ready', 'ready');
    // The stranger's stream (its own SSRC, a valid payload type) reaches the port before the peer's first packet.
    const strangerStream = new PeerStream(peer, rtpPort, PT_PCMU);
    const STRANGER_PACKETS = 5;
    for (let i = 0; i < STRANGER_PACKETS; i++)
      stranger.send(strangerStream.packet(new Uint8Array(160).fill(0x7e)), rtpPort, LOOPBACK);
    await waitFor(
      () => (h.calls.session(callId)?.counters.wrongSource ?? 0) === STRANGER_PACKETS,
      "the stranger's packets refused",
    );
    const stream = new PeerStream(peer, rtpPort, PT_PCMU);
    const N = 10;
    await stream.play(Array.from({ length: N }, (_, i) => new Uint8Array(160).fill(0x20 + i)));
    await waitFor(() => h.firstBytes[0].length >= N, "the peer's packets heard");
    t.same(
      h.firstBytes[0],
      Array.from({ length: N }, (_, i) => 0x20 + i),
      "the peer's audio, nothing of the stranger's",
    );
    await waitFor(() => peer.rtpIn.length >= 5, "Parley's stream to the peer");
    t.equal(toStranger.length, 0, 'nothing sent to the stranger');
    h.calls.handle({ type: 'call_hangup', callId, reason: 'bye' });
    await waitFor(() => h.store.only().finish !== null, 'the record');
  },
);

t.test(
  'hold stops the stream and the inactivity timeout; resume marks the first packet; silence then ends the call',
  async (t) => {
    const h = harness({ rtpTimeoutMs: 600 });
    const peer = await TestPeer.open();
    t.teardown(async () => {
      peer.close();
      await h.close();
    });
    const callId = 'hold';
    const { rtpPort } = await startCall(h, peer, { callId });
    const stream = new PeerStream(peer, rtpPort, PT_PCMU);
    await stream.play(silence(15));
    await waitFor(() => peer.rtpIn.length >= 10, "Parley's stream");
    const remote = { address: LOOPBACK, port: peer.port };
    h.calls.handle({ type: 'call_media_update', callId, remote, media: media('PCMU', { direction: 'sendonly' }) });
    await sleep(60);
    const held = peer.packets();
    // On hold, the peer sends nothing either, for longer than the timeout.
    await sleep(1200);
    t.equal(peer.packets().length, held.length, 'nothing sent on hold');
    t.equal(h.calls.count, 1, 'no inactivity timeout on hold');
    t.equal(notice(h, 'call_ended', callId), undefined);

    h.calls.handle({ type: 'call_media_update', callId, remote, media: media('PCMU', { direction: 'sendrecv' }) });
    await waitFor(() => peer.packets().length > held.length + 3, 'the stream again');
    const before = held[held.length - 1].view;
    const after = peer.packets()[held.length].view;
    t.equal(after.marker, true, 'the first packet after the hold has the marker bit');
    t.equal(after.sequenceNumber, (before.sequenceNumber + 1) & 0xffff, 'sequence numbers continue');
    const elapsedTicks = (after.timestamp - before.timestamp) >>> 0;
    t.ok(
      elapsedTicks >= 1200 * 8 && elapsedTicks % 160 === 0,
      `the timestamp kept the media clock through the hold (+${elapsedTicks})`,
    );

    // The peer stays silent past PARLEY_RTP_TIMEOUT_SEC: the call ends as an error.
    await waitFor(() => notice(h, 'call_ended', callId) !== undefined, 'call_ended after RTP inactivity');
    t.match(notice(h, 'call_ended', callId), { endedBy: 'error', started: true });
    t.equal(h.store.only().finish?.ended_by, 'error');
  },
);

t.test('ptime 40: two frames a packet, timestamps 320 apart', async (t) => {
  const h = harness();
  const peer = await TestPeer.open();
  t.teardown(async () => {
    peer.close();
    await h.close();
  });
  const callId = 'ptime';
  await startCall(h, peer, { callId, media: media('PCMA', { ptimeMs: 40 }) });
  await waitFor(() => peer.rtpIn.length >= 6, 'packets');
  const p = peer.packets();
  t.ok(
    p.every((x) => x.payload.length === 320),
    '320 bytes of A-law each',
  );
  t.ok(
    p.slice(1).every((x, i) => (x.view.timestamp - p[i].view.timestamp) >>> 0 === 320),
    'each 40 ms of media after the last',
  );
  h.calls.handle({ type: 'call_hangup', callId, reason: 'bye' });
  await waitFor(() => notice(h, 'call_ended', callId) !== undefined, 'call_ended');
});
