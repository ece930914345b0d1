import t from 'tap';
import { readdirSync } from 'node:fs';
import { createRtpPacketView, decodeView, RtpSender } from '../../src/media/rtp.js';
import {
  createTelephoneEvent,
  dtmfDigit,
  readTelephoneEvent,
  TelephoneEventReceiver,
  TelephoneEventSender,
  TELEPHONE_EVENT_END_REPEATS,
} from '../../src/media/rfc4733.js';
import { SIPP_CAPTURES_DIR } from '../helpers/debian-packages.js';
import { readPcapUdp } from './pcap.js';

t.test("SIPp's dtmf_2833_*.pcap captures decode to their digits", async (t) => {
  let files: string[];
  try {
    files = readdirSync(SIPP_CAPTURES_DIR).filter((f) => /^dtmf_2833_.*\.pcap$/.test(f));
  } catch (err) {
    throw new Error(`SIPp captures missing in ${SIPP_CAPTURES_DIR} (install sip-tester): ${(err as Error).message}`, {
      cause: err,
    });
  }
  t.equal(files.length, 12, 'ten digits, star and pound');
  const names: Record<string, string> = { star: '*', pound: '#' };
  for (const f of files) {
    const key = f.slice('dtmf_2833_'.length, -'.pcap'.length);
    const expected = names[key] ?? key;
    const rx = new TelephoneEventReceiver();
    const view = createRtpPacketView();
    const heard: string[] = [];
    let packets = 0;
    for (const d of readPcapUdp(`${SIPP_CAPTURES_DIR}/${f}`)) {
      if (decodeView(d.payload, view) !== 'ok') continue;
      packets++;
      const code = rx.receive(d.payload, view.payloadOffset, view.payloadLength, view.timestamp);
      if (code >= 0) heard.push(dtmfDigit(code)!);
    }
    t.ok(packets > 3, `${f}: RTP packets found`);
    t.same(heard, [expected], `${f} -> ${expected}, reported once`);
    t.ok(rx.lastEventEnded, `${f}: end packet seen`);
    t.ok(rx.duplicates >= TELEPHONE_EVENT_END_REPEATS, `${f}: updates and end repeats deduplicated`);
  }
});

function eventPacket(ts: number, event: number, end: boolean, duration: number): Uint8Array {
  const b = new Uint8Array(16);
  b[0] = 0x80;
  b[1] = 101;
  b[4] = ts >>> 24;
  b[5] = (ts >>> 16) & 0xff;
  b[6] = (ts >>> 8) & 0xff;
  b[7] = ts & 0xff;
  b[12] = event;
  b[13] = (end ? 0x80 : 0) | 10;
  b[14] = duration >> 8;
  b[15] = duration & 0xff;
  return b;
}

t.test('receive: zero-duration packets ignored, reordered old events not reported again', async (t) => {
  const rx = new TelephoneEventReceiver();
  const v = createRtpPacketView();
  const feed = (b: Uint8Array) => (decodeView(b, v), rx.receive(b, v.payloadOffset, v.payloadLength, v.timestamp));
  t.equal(feed(eventPacket(1000, 5, false, 0)), -1, 'zero duration ignored');
  t.equal(feed(eventPacket(1000, 5, false, 160)), 5, 'first real packet reports');
  t.equal(feed(eventPacket(1000, 5, true, 800)), -1);
  t.equal(feed(eventPacket(2000, 7, false, 160)), 7, 'same digit at a new timestamp is a new press');
  t.equal(feed(eventPacket(1000, 5, true, 800)), -1, 'late packet of the older event');
  t.equal(feed(eventPacket(3000, 11, false, 160)), 11);
  t.equal(rx.ignored, 1);
});

t.test('send: marker on the first packet, growing duration, end packet three times, continuous sequence', async (t) => {
  const rtp = new RtpSender({ payloadType: 0, ssrc: 1, initialSequence: 100, initialTimestamp: 5000 });
  const tx = new TelephoneEventSender(rtp, { payloadType: 101, clockRate: 8000, ticksPerPacket: 160 });
  tx.send('9#', 100);
  const out = new Uint8Array(64);
  const v = createRtpPacketView();
  const ev = createTelephoneEvent();
  const seen: string[] = [];
  while (tx.active) {
    const n = tx.writeTick(out);
    rtp.advanceTimestamp(160);
    t.ok(n > 0, 'a packet every tick while active');
    t.equal(decodeView(out, v, n), 'ok');
    readTelephoneEvent(out, v.payloadOffset, v.payloadLength, ev);
    seen.push(
      `${v.sequenceNumber}:${v.timestamp}:${v.marker ? 'M' : '-'}:${dtmfDigit(ev.event)}:${ev.end ? 'E' : '-'}:${ev.duration}`,
    );
  }
  t.same(seen, [
    '100:5000:M:9:-:160',
    '101:5000:-:9:-:320',
    '102:5000:-:9:-:480',
    '103:5000:-:9:-:640',
    '104:5000:-:9:E:800',
    '105:5000:-:9:E:800',
    '106:5000:-:9:E:800',
    '107:6120:M:#:-:160',
    '108:6120:-:#:-:320',
    '109:6120:-:#:-:480',
    '110:6120:-:#:-:640',
    '111:6120:-:#:E:800',
    '112:6120:-:#:E:800',
    '113:6120:-:#:E:800',
  ]);
  t.equal(tx.writeTick(out), 0, 'idle afterwards');
  // Our own packets decode back to the digits, once each.
  const rx = new TelephoneEventReceiver();
  const rtp2 = new RtpSender({ payloadType: 0, ssrc: 1 });
  const tx2 = new TelephoneEventSender(rtp2, { payloadType: 101, clockRate: 8000, ticksPerPacket: 160 });
  tx2.send('0123456789*#ABCD', 40);
  let digits = '';
  while (tx2.active) {
    const n = tx2.writeTick(out);
    rtp2.advanceTimestamp(160);
    decodeView(out, v, n);
    const code = rx.receive(out, v.payloadOffset, v.payloadLength, v.timestamp);
    if (code >= 0) digits += dtmfDigit(code);
  }
  t.equal(digits, '0123456789*#ABCD');
  t.throws(() => tx2.send('x'), RangeError);
});
