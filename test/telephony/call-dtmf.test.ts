// Keys pressed on a call reach the conversation once each, however they come: RFC 4733 telephone events (SIPp's
// captures, end packets repeated as RFC 4733 2.5.1.4 says, played into the call's stream), SIP INFO (call_dtmf), or
// in-band tones when no telephone-event was negotiated (and only then). A run of keys is one user item on the record,
// and the engine answers it.
import t from 'tap';
import { decodeView, createRtpPacketView } from '../../src/media/rtp.js';
import { TelephoneEventReceiver, dtmfDigit } from '../../src/media/rfc4733.js';
import { parseScript } from '../conversation/harness.js';
import { readPcapUdp } from '../media/pcap.js';
import {
  agent,
  g711Frames,
  harness,
  media,
  PeerStream,
  PT_EVENT,
  PT_PCMU,
  sleep,
  startCall,
  TestPeer,
  waitFor,
  type Harness,
} from './harness.js';

t.setTimeout(120_000);

const SIPP_DIR = '/usr/share/sip-tester';
const silence = (frames: number) => g711Frames(new Int16Array(frames * 160), 'PCMU');

/** The capture's telephone-event packets re-stamped into `stream` (its SSRC, sequence and timestamps), 20 ms apart. */
async function playCapture(stream: PeerStream, file: string): Promise<Uint8Array> {
  const v = createRtpPacketView();
  const eventTs = stream.sender.header.timestamp;
  let lastSeq = -1;
  let last: Uint8Array | null = null;
  for (const d of readPcapUdp(`${SIPP_DIR}/${file}`)) {
    if (decodeView(d.payload, v, d.payload.length) !== 'ok') continue;
    const payload = d.payload.subarray(v.payloadOffset, v.payloadOffset + v.payloadLength);
    // RFC 4733 2.5.1.4: the end packet goes out three times, the same packet each time.
    if (v.sequenceNumber === lastSeq && last) {
      stream.send(last);
      continue;
    }
    await sleep(20);
    last = stream.packet(payload, v.marker, PT_EVENT, eventTs);
    lastSeq = v.sequenceNumber;
    stream.send(last);
    // The stream's clock runs on while the event plays (RFC 4733 2.5.1.1: all its packets carry its start time).
    stream.sender.advanceTimestamp(160);
  }
  return last!;
}

function userItems(h: Harness): string[] {
  return h.store
    .only()
    .items.filter((i) => i.role === 'user')
    .map((i) => String(i.live_transcript));
}

/** A DTMF tone pair (ITU-T Q.23) of `ms`, then as long a pause, as 8 kHz PCM. */
function tone(digit: string, ms: number): Int16Array {
  const rows = [697, 770, 852, 941];
  const cols = [1209, 1336, 1477, 1633];
  const keys = ['123A', '456B', '789C', '*0#D'];
  const r = keys.findIndex((k) => k.includes(digit));
  const c = keys[r].indexOf(digit);
  const n = (8000 * ms) / 1000;
  const out = new Int16Array(2 * n);
  for (let i = 0; i < n; i++)
    out[i] = Math.round(
      8000 * (Math.sin((2 * Math.PI * rows[r] * i) / 8000) + Math.sin((2 * Math.PI * cols[c] * i) / 8000)),
    );
  return out;
}

t.test('RFC 4733 digits from SIPp captures and SIP INFO digits: once each, one item per run, answered', async (t) => {
  const h = harness();
  const peer = await TestPeer.open();
  t.teardown(async () => {
    peer.close();
    await h.close();
  });
  const callId = 'dtmf-4733';
  const { rtpPort } = await startCall(h, peer, { callId, media: media('PCMU') });
  await waitFor(() => h.conversations[0]?.state === 'ready', 'ready');
  const stream = new PeerStream(peer, rtpPort, PT_PCMU);
  await stream.play(silence(10));
  await playCapture(stream, 'dtmf_2833_1.pcap');
  await stream.play(silence(5));
  const poundEnd = await playCapture(stream, 'dtmf_2833_pound.pcap');
  // `#` ends the run at once: one item, "1#", though every end packet came three times.
  await waitFor(() => h.store.only().items.some((i) => i.live_transcript === 'DTMF 1#'), 'the DTMF item');
  // The engine answers it (echo: "Okay.").
  await waitFor(() => h.store.only().items.some((i) => i.role === 'assistant'), 'the answer');
  // A late repeat of the last end packet is no new key.
  stream.send(poundEnd);
  await stream.play(silence(5));
  // SIP INFO keys, one message each: the run ends 2 s after the last.
  h.calls.handle({ type: 'call_dtmf', callId, digits: '4' });
  h.calls.handle({ type: 'call_dtmf', callId, digits: '2' });
  await waitFor(() => userItems(h).includes('DTMF 42'), 'the SIP INFO item');
  h.calls.handle({ type: 'call_hangup', callId, reason: 'bye' });
  await waitFor(() => h.store.only().finish !== null, 'the record');
  t.same(userItems(h), ['DTMF 1#', 'DTMF 42'], 'each key once, each run one user item');
  const transcript = String(h.store.only().finish?.live_transcript);
  t.match(transcript, /user: DTMF 1#\nassistant: Okay\./, 'in the transcript, answered');
});

t.test('in-band DTMF: detected in the audio without telephone-event, and only then', async (t) => {
  for (const negotiated of [false, true]) {
    const h = harness();
    const peer = await TestPeer.open();
    const callId = `dtmf-inband-${negotiated}`;
    const { rtpPort } = await startCall(h, peer, {
      callId,
      media: media('PCMU', { telephoneEventPayloadType: negotiated ? PT_EVENT : null }),
    });
    await waitFor(() => h.conversations[0]?.state === 'ready', 'ready');
    const stream = new PeerStream(peer, rtpPort, PT_PCMU);
    const tones = [...g711Frames(tone('5', 100), 'PCMU'), ...g711Frames(tone('#', 100), 'PCMU')];
    await stream.play([...silence(5), ...tones, ...silence(10)]);
    if (!negotiated) await waitFor(() => userItems(h).includes('DTMF 5#'), 'the in-band item');
    h.calls.handle({ type: 'call_hangup', callId, reason: 'bye' });
    await waitFor(() => h.store.only().finish !== null, 'the record');
    const keys = userItems(h).filter((i) => i.startsWith('DTMF'));
    if (negotiated) t.same(keys, [], 'telephone-event negotiated: tones in the audio are not keys');
    else t.same(keys, ['DTMF 5#'], 'no telephone-event: the tones are keys, each once');
    peer.close();
    await h.close();
  }
});

t.test("the keypad tool's keys go to the peer as RFC 4733 events, the audio paused meanwhile", async (t) => {
  const h = harness({
    engine: 'scripted',
    script: parseScript({
      responses: [{ say: 'Dialing.', tool_calls: [{ name: 'keypad', arguments: { digits: '12#' } }] }],
    }),
  });
  const peer = await TestPeer.open();
  t.teardown(async () => {
    peer.close();
    await h.close();
  });
  const callId = 'dtmf-out';
  const keypad = {
    id: 'tool_keypad',
    name: 'keypad',
    definition: { type: 'built_in_keypad_input', name: 'keypad', description: 'Press keys', execution_mode: 'sync' },
  };
  await startCall(h, peer, {
    callId,
    agent: { ...agent({ generate_welcome_message: true, tools: ['keypad'] }), tools: [keypad] },
  });
  const events = () => peer.packets().filter((p) => p.view.payloadType === PT_EVENT);
  // Three digits of 100 ms: 5 packets each, the end packet three times over.
  await waitFor(() => events().length >= 3 * 7, 'the digits');
  const rx = new TelephoneEventReceiver();
  const heard = events()
    .map((p) => rx.receive(p.payload, 0, p.payload.length, p.view.timestamp))
    .filter((code) => code >= 0)
    .map((code) => dtmfDigit(code));
  t.same(heard, ['1', '2', '#'], 'each key once');
  t.same(
    events().filter((p) => p.view.marker).length,
    3,
    'the marker on the first packet of each event (RFC 4733 2.5.1.1)',
  );
  const all = peer.packets();
  const first = all.indexOf(events()[0]);
  const last = all.indexOf(events()[events().length - 1]);
  t.ok(
    all.slice(first, last + 1).every((p) => p.view.payloadType === PT_EVENT),
    'no audio packet among the events',
  );
  t.ok(
    all.slice(1).every((p, i) => p.view.sequenceNumber === ((all[i].view.sequenceNumber + 1) & 0xffff)),
    'one sequence through audio and events',
  );
  h.calls.handle({ type: 'call_hangup', callId, reason: 'bye' });
  await waitFor(() => h.store.only().finish !== null, 'the record');
});
