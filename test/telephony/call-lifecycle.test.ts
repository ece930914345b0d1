// A call's life in the worker as main drives it: call_media_ready for every assignment (refusals named), a hang-up
// before the answer frees the ports with no record, worker shutdown ends every call and saves the live ones, and
// listen-only calls speak their message uninterruptibly and then only listen, until the silence limit.
import dgram from 'node:dgram';
import t from 'tap';
import { loadPrompt } from '../media/speech.js';
import {
  agent,
  envelope,
  g711Decode,
  g711Frames,
  harness,
  LOOPBACK,
  notice,
  PeerStream,
  PT_PCMU,
  startCall,
  TestPeer,
  waitFor,
} from './harness.js';

t.setTimeout(120_000);

/** Whether both ports can be bound again (the call's sockets are closed). */
async function portsFree(rtpPort: number, ports = [rtpPort, rtpPort + 1]): Promise<boolean> {
  const sockets: dgram.Socket[] = [];
  try {
    for (const port of ports) {
      const s = dgram.createSocket('udp4');
      sockets.push(s);
      await new Promise<void>((resolve, reject) => {
        s.once('error', reject);
        s.bind(port, LOOPBACK, resolve);
      });
    }
    return true;
  } catch {
    return false;
  } finally {
    for (const s of sockets) s.close();
  }
}

t.test('refusals, a hang-up before the answer, and shutdown', async (t) => {
  const h = harness();
  const peer = await TestPeer.open();
  t.teardown(async () => {
    peer.close();
    await h.close();
  });
  // A cancel before the answer: the ports are freed, no record, call_ended once (started: false).
  const { rtpPort, msg } = await startCall(h, peer, { callId: 'cancelled' }, false);
  t.notOk(await portsFree(rtpPort), 'the ports are bound once assigned');
  h.calls.handle({ type: 'call_hangup', callId: 'cancelled', reason: 'cancel' });
  t.match(notice(h, 'call_ended', 'cancelled'), { endedBy: 'user', started: false });
  t.ok(await portsFree(rtpPort), 'and free after the cancel');
  t.equal(h.store.records.size, 0, 'no record');
  h.calls.handle({ type: 'call_hangup', callId: 'cancelled', reason: 'bye' });
  t.equal(h.notices.filter((n) => n.type === 'call_ended').length, 1, 'call_ended once');

  // Refusals: a port taken, an odd port, a callId already held.
  const blocker = dgram.createSocket('udp4');
  await new Promise<void>((r) => blocker.bind(msg.rtpPort + 1, LOOPBACK, r));
  h.calls.handle({ ...msg, callId: 'taken' });
  t.match(notice(h, 'call_media_ready', 'taken'), { ok: false, error: /EADDRINUSE/ }, 'the RTCP port is taken');
  t.ok(await portsFree(msg.rtpPort, [msg.rtpPort]), 'its RTP port, bound first, closed again');
  blocker.close();
  h.calls.handle({ ...msg, callId: 'odd', rtpPort: msg.rtpPort + 1 });
  t.match(notice(h, 'call_media_ready', 'odd'), { ok: false, error: /even/ });
  const failed = await startCall(h, peer, { callId: 'failed' }, false);
  h.calls.handle({ ...failed.msg });
  t.equal(
    h.notices.filter((n) => n.type === 'call_media_ready' && n.callId === 'failed' && !n.ok).length,
    1,
    'a second call_assigned of one callId is refused',
  );
  // An outbound call that never connected.
  h.calls.handle({ type: 'call_hangup', callId: 'failed', reason: 'failed' });
  t.match(notice(h, 'call_ended', 'failed'), { endedBy: 'error', started: false });

  // Shutdown: one call live, one assigned; both end, the live one's record saved first.
  const live = await startCall(h, peer, { callId: 'live' });
  h.calls.handle({ type: 'call_start', callId: 'live' }); // a repeated call_start changes nothing
  await startCall(h, peer, { callId: 'waiting' }, false);
  await waitFor(() => h.conversations[0]?.state === 'ready', 'ready');
  t.equal(h.calls.count, 2);
  await h.calls.endAll(5000);
  t.match(notice(h, 'call_ended', 'live'), { endedBy: 'error', started: true });
  t.equal(h.savedAtEnd.get('live'), true, "the live call's record was saved before call_ended");
  t.match(notice(h, 'call_ended', 'waiting'), { started: false });
  t.equal(h.store.only().finish?.ended_by, 'error');
  t.equal(h.calls.count, 0);
  t.ok(await portsFree(live.rtpPort), 'its ports closed');
  t.same(
    h.notices.filter((n) => n.type === 'conversation_opened' || n.type === 'conversation_closed').map((n) => n.type),
    ['conversation_opened', 'conversation_closed'],
    "the live call was in the worker's directory while it ran",
  );
});

t.test(
  'listen-only: the message is spoken uninterruptibly, then the call is only transcribed, until the silence limit',
  async (t) => {
    const h = harness();
    const peer = await TestPeer.open();
    t.teardown(async () => {
      peer.close();
      await h.close();
    });
    const callId = 'listen';
    const message = 'Thank you for calling. Please leave your message.';
    const { rtpPort } = await startCall(h, peer, {
      callId,
      listenOnly: true,
      agent: agent({
        listen_only_inbound_enabled: true,
        listen_only_inbound_message: message,
        welcome_message: 'Not this one.',
        no_input_poke_sec: 1,
        no_input_end_conversation_sec: 2,
      }),
    });
    const loud = () => peer.packets().filter((p) => envelope(g711Decode(p.payload, 'PCMU'))[0] > 300).length;
    await waitFor(() => loud() > 10, 'the message on RTP');
    // The caller talks over the message: it goes on (uninterruptible), and the caller is not answered.
    const stream = new PeerStream(peer, rtpPort, PT_PCMU);
    const prompt = loadPrompt('call-forwarding');
    await stream.play([...g711Frames(prompt, 'PCMU'), ...g711Frames(new Int16Array(60 * 160), 'PCMU')]);
    await waitFor(() => notice(h, 'call_ended', callId) !== undefined, 'the silence limit');
    const rec = h.store.only();
    t.equal(rec.finish?.ended_by, 'assistant_silence_limit_reached', 'the silence limit still applies');
    t.equal(rec.conversation.settings?.listen_only, true, 'the record says listen-only');
    const assistant = rec.items.filter((i) => i.role === 'assistant');
    t.same(
      assistant.map((i) => i.live_transcript),
      [message],
      'the message alone was spoken, whole: no echo, no poke',
    );
    t.equal(rec.finish?.interruptions_count, 0, 'not interrupted');
    t.ok(
      rec.items.some((i) => i.role === 'user'),
      "the caller's turn is on the record",
    );
  },
);
