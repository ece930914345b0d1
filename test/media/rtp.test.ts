import t from 'tap';
import {
  createRtpHeader,
  createRtpPacketView,
  decodeView,
  encodeInto,
  payloadOf,
  RtpSender,
  RTP_HEADER_BYTES,
  seqDiff,
  tsDiff,
} from '../../src/media/rtp.js';

t.test('encodeInto then decodeView round-trips every header field and the payload', async (t) => {
  const h = createRtpHeader();
  h.marker = true;
  h.payloadType = 8;
  h.sequenceNumber = 0xfffe;
  h.timestamp = 0xfedcba98;
  h.ssrc = 0x89abcdef;
  const payload = Uint8Array.from({ length: 160 }, (_, i) => (i * 7) & 0xff);
  const out = new Uint8Array(1500);
  const n = encodeInto(h, payload, out);
  t.equal(n, RTP_HEADER_BYTES + 160);
  t.equal(out[0], 0x80, 'V=2, no padding, extension or CSRC');
  const v = createRtpPacketView();
  t.equal(decodeView(out, v, n), 'ok');
  t.same(
    [v.marker, v.payloadType, v.sequenceNumber, v.timestamp, v.ssrc, v.csrcCount, v.payloadLength],
    [true, 8, 0xfffe, 0xfedcba98, 0x89abcdef, 0, 160],
  );
  t.same(payloadOf(out, v), payload);
});

t.test('decodeView skips CSRCs and a header extension and strips padding', async (t) => {
  // V=2 P=1 X=1 CC=2, M=0 PT=0, seq 1, ts 2, ssrc 3, 2 CSRCs, extension 0xBEDE of 1 word, payload 3 bytes, padding 4.
  const bytes = [
    0xb2, 0x00, 0, 1, 0, 0, 0, 2, 0, 0, 0, 3, 1, 1, 1, 1, 2, 2, 2, 2, 0xbe, 0xde, 0, 1, 9, 9, 9, 9, 0xaa, 0xbb, 0xcc, 0,
    0, 0, 4,
  ];
  const buf = Uint8Array.from(bytes);
  const v = createRtpPacketView();
  t.equal(decodeView(buf, v), 'ok');
  t.equal(v.csrcCount, 2);
  t.ok(v.hasExtension);
  t.equal(v.extensionProfile, 0xbede);
  t.equal(v.paddingBytes, 4);
  t.same(Array.from(payloadOf(buf, v)), [0xaa, 0xbb, 0xcc]);
});

t.test('malformed packets are reported, never thrown', async (t) => {
  const v = createRtpPacketView();
  t.equal(decodeView(new Uint8Array(11).fill(0x80), v), 'too_short');
  t.equal(decodeView(Uint8Array.from([0x40, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]), v), 'bad_version', 'version 1');
  t.equal(decodeView(Uint8Array.from([0x80, 200, 0, 7, 0, 0, 0, 0, 0, 0, 0, 0]), v), 'rtcp', 'RTCP SR on a muxed port');
  t.equal(
    decodeView(Uint8Array.from([0x8f, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 2]), v),
    'bad_csrc',
    '15 CSRCs in 14 bytes',
  );
  t.equal(decodeView(Uint8Array.from([0x90, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xbe, 0xde, 0, 9]), v), 'bad_extension');
  t.equal(
    decodeView(Uint8Array.from([0xa0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 2, 30]), v),
    'bad_padding',
    'padding past the header',
  );
  t.equal(
    decodeView(Uint8Array.from([0xa0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 2, 0]), v),
    'bad_padding',
    'zero padding count',
  );
  // Random garbage never throws.
  let seed = 7;
  const rnd = () => ((seed = (seed * 1103515245 + 12345) >>> 0) >>> 16) & 0xff;
  for (let i = 0; i < 2000; i++) {
    const b = Uint8Array.from({ length: rnd() % 64 }, rnd);
    const r = decodeView(b, v);
    if (r === 'ok')
      t.ok(v.payloadOffset + v.payloadLength + v.paddingBytes <= b.length || t.fail('payload outside packet'));
  }
});

t.test('RtpSender: sequence numbers wrap, the timestamp advances only when told, fixed events timestamp', async (t) => {
  const s = new RtpSender({ payloadType: 0, ssrc: 42, initialSequence: 0xffff, initialTimestamp: 0xffffff00 });
  const out = new Uint8Array(64);
  const v = createRtpPacketView();
  s.writeNext(out, true);
  decodeView(out, v);
  t.same([v.sequenceNumber, v.timestamp, v.marker, v.ssrc], [0xffff, 0xffffff00, true, 42]);
  s.advanceTimestamp(0x160);
  s.writeNext(out, false);
  decodeView(out, v);
  t.same([v.sequenceNumber, v.timestamp], [0, 0x60], 'both wrap');
  s.writeNext(out, false, 101, 1234);
  decodeView(out, v);
  t.same([v.sequenceNumber, v.timestamp, v.payloadType], [1, 1234, 101]);
  s.writeNext(out, false);
  decodeView(out, v);
  t.same([v.timestamp, v.payloadType], [0x60, 0], 'stream timestamp and payload type untouched by an override');
});

t.test('random initial values differ between senders (RFC 3550 5.1)', async (t) => {
  const a = new RtpSender({ payloadType: 0 });
  const b = new RtpSender({ payloadType: 0 });
  t.not(`${a.header.ssrc}/${a.header.timestamp}`, `${b.header.ssrc}/${b.header.timestamp}`);
});

t.test('modular distances', async (t) => {
  t.equal(seqDiff(0xfff0, 0x0010), 0x20);
  t.equal(seqDiff(0x0010, 0xfff0), -0x20);
  t.equal(tsDiff(0xffffff00, 0x100), 0x200);
  t.equal(tsDiff(0x100, 0xffffff00), -0x200);
});
