// RTCP packets of a call (RFC 3550 6): reports written and read back field by field, compound packets with SDES and
// BYE, what a receiver refuses (RFC 3550 A.2), the round trip from a report block (6.4.1), the report interval (6.3.1).
import t from 'tap';
import {
  createPeerRtcp,
  createReportBlock,
  ntpMiddle,
  readCompound,
  roundTripMs,
  RTCP_BYE,
  RTCP_MIN_INTERVAL_MS,
  RTCP_RR,
  RTCP_SDES,
  RTCP_SR,
  rtcpIntervalMs,
  sdesPacket,
  writeBye,
  writeReport,
} from '../../src/telephony/rtcp.js';

const OURS = 0xdeadbeef;
const THEIRS = 0x01020304;

t.test('a sender report with a block about us reads back field by field', async (t) => {
  const b = new Uint8Array(256);
  const block = {
    ...createReportBlock(),
    ssrc: OURS,
    fractionLost: 25,
    cumulativeLost: -3,
    extendedHighestSeq: 0x1_0005,
    jitter: 77,
    lastSr: 0x12345678,
    delaySinceLastSr: 6553,
  };
  const wallMs = Date.UTC(2026, 0, 2, 3, 4, 5, 678);
  const n = writeReport(b, 0, THEIRS, { wallMs, rtpTimestamp: 0xfffffff0, packets: 500, octets: 80_000 }, block);
  t.equal(n, 52, 'header, SSRC, sender info, one block');
  t.equal(b[1], RTCP_SR);
  t.equal(b[0] & 0x1f, 1, 'one report block');
  t.equal(((b[2] << 8) | b[3]) + 1, 13, 'length in words');
  const p = readCompound(b, n, OURS, createPeerRtcp());
  t.ok(p.valid && p.senderReport && p.aboutUs);
  t.same({ ...p.block }, block, 'the block as written (negative cumulative loss included)');
  t.equal(p.srNtpMiddle, ntpMiddle(wallMs), 'LSR: the middle of the NTP timestamp');
  t.equal(readCompound(b, n, 0x99, createPeerRtcp()).aboutUs, false, 'a block about another SSRC is not ours');
});

t.test('compound: RR, SDES with the CNAME, BYE; 32-bit aligned', async (t) => {
  const sdes = sdesPacket(OURS, 'abcDEF123');
  t.equal(sdes.length % 4, 0);
  t.equal(sdes[1], RTCP_SDES);
  t.equal(Buffer.from(sdes.subarray(10, 19)).toString('ascii'), 'abcDEF123');
  const b = new Uint8Array(256);
  let n = writeReport(b, 0, OURS, null, null);
  t.equal(b[1], RTCP_RR);
  t.equal(n, 8, 'a receiver report without blocks');
  b.set(sdes, n);
  n += sdes.length;
  n += writeBye(b, n, OURS);
  t.equal(b[n - 7], RTCP_BYE);
  const p = readCompound(b, n, THEIRS, createPeerRtcp());
  t.ok(p.valid, 'valid');
  t.ok(p.bye, 'says BYE');
  t.notOk(p.senderReport);
});

t.test('what is not a valid compound packet (RFC 3550 A.2)', async (t) => {
  const b = new Uint8Array(64);
  const n = writeReport(b, 0, OURS, null, null);
  const bad = (mutate: (x: Uint8Array) => Uint8Array, why: string) => {
    const copy = mutate(b.slice(0, n));
    t.notOk(readCompound(copy, copy.length, THEIRS, createPeerRtcp()).valid, why);
  };
  bad((x) => ((x[0] = (1 << 6) | (x[0] & 0x3f)), x), 'version 1');
  bad((x) => ((x[3] = 5), x), 'a length past the datagram');
  bad((x) => x.subarray(0, 6), 'truncated');
  const sdesFirst = sdesPacket(OURS, 'x');
  t.notOk(readCompound(sdesFirst, sdesFirst.length, THEIRS, createPeerRtcp()).valid, 'SDES first');
  const withBlocks = new Uint8Array(64);
  const m = writeReport(withBlocks, 0, OURS, null, { ...createReportBlock(), ssrc: THEIRS });
  withBlocks[0] = (2 << 6) | 2; // claims two blocks in a packet long enough for one
  t.notOk(readCompound(withBlocks, m, THEIRS, createPeerRtcp()).valid, 'more blocks than the packet holds');
});

t.test('cumulative loss is clamped to 24 bits', async (t) => {
  const b = new Uint8Array(64);
  const n = writeReport(b, 0, THEIRS, null, { ...createReportBlock(), ssrc: OURS, cumulativeLost: 1e9 });
  t.equal(readCompound(b, n, OURS, createPeerRtcp()).block.cumulativeLost, 0x7fffff);
});

t.test('round trip from a report block: A - LSR - DLSR', async (t) => {
  const sentAt = Date.UTC(2026, 5, 1, 12, 0, 0, 0);
  const block = { ...createReportBlock(), lastSr: ntpMiddle(sentAt), delaySinceLastSr: Math.round(0.1 * 65536) };
  const rtt = roundTripMs(block, sentAt + 150)!;
  t.ok(Math.abs(rtt - 50) < 0.1, `50 ms (${rtt})`);
  t.equal(roundTripMs(createReportBlock(), sentAt), null, 'no SR of ours seen: no round trip');
});

t.test(
  'the report interval: the 5 s minimum, randomised over [0.5, 1.5] and compensated, half of it at first',
  async (t) => {
    const k = Math.E - 1.5;
    t.equal(rtcpIntervalMs(false, 0), (RTCP_MIN_INTERVAL_MS * 0.5) / k);
    t.equal(rtcpIntervalMs(false, 1), (RTCP_MIN_INTERVAL_MS * 1.5) / k);
    t.equal(rtcpIntervalMs(true, 0.5), RTCP_MIN_INTERVAL_MS / 2 / k);
    const samples = Array.from({ length: 2000 }, () => rtcpIntervalMs(false));
    const mean = samples.reduce((a, b) => a + b, 0) / samples.length;
    t.ok(Math.abs(mean - RTCP_MIN_INTERVAL_MS / k) < 100, `mean ${mean.toFixed(0)} ms`);
    t.ok(samples.every((s) => s >= (RTCP_MIN_INTERVAL_MS * 0.5) / k && s <= (RTCP_MIN_INTERVAL_MS * 1.5) / k));
  },
);
