// Reception statistics of the caller's stream (RFC 3550 A.1, A.3, A.8): expected, received and lost, the fraction
// lost per report interval, sequence wrap and restarts, duplicates, and interarrival jitter.
import t from 'tap';
import { createRtpHeader } from '../../src/media/rtp.js';
import { createReportBlock } from '../../src/telephony/rtcp.js';
import { ReceptionStats, peerSummary } from '../../src/telephony/reception-stats.js';

/** Feeds packets: [sequence, arrival ms] with 20 ms of media each (timestamp from the sequence offset). */
function feed(stats: ReceptionStats, packets: [number, number][], ssrc = 7, firstSeq = packets[0]?.[0] ?? 0): void {
  const h = createRtpHeader();
  h.ssrc = ssrc;
  for (const [seq, at] of packets) {
    h.sequenceNumber = seq & 0xffff;
    h.timestamp = (1_000_000 + (seq - firstSeq) * 160) >>> 0;
    stats.update(h, at);
  }
}

const inOrder = (from: number, n: number, skip: number[] = []): [number, number][] =>
  Array.from({ length: n }, (_, i): [number, number] => [from + i, 1000 + i * 20]).filter(([s]) => !skip.includes(s));

t.test('in order and on time: nothing lost, no jitter', async (t) => {
  const s = new ReceptionStats(8000);
  feed(s, inOrder(100, 50));
  t.match(s.summary(), { packets_expected: 50, packets_received: 50, packets_lost: 0, loss_fraction: 0, jitter_ms: 0 });
});

t.test('losses: cumulative, and the fraction of each report interval', async (t) => {
  const s = new ReceptionStats(8000);
  feed(s, inOrder(0, 100, [10, 20, 30, 40, 50]));
  const b = createReportBlock();
  t.ok(s.reportInto(b));
  t.equal(b.cumulativeLost, 5);
  t.equal(b.fractionLost, Math.floor((5 * 256) / 100));
  t.equal(b.extendedHighestSeq, 99);
  // The next interval loses nothing: its fraction is 0, the cumulative count stays.
  feed(s, inOrder(100, 50), 7, 0);
  s.reportInto(b);
  t.equal(b.fractionLost, 0);
  t.equal(b.cumulativeLost, 5);
  t.equal(s.summary().loss_fraction, 5 / 150);
});

t.test('duplicates make the loss negative, never the fraction', async (t) => {
  const s = new ReceptionStats(8000);
  const p = inOrder(0, 10);
  feed(s, [...p, p[5], p[6]]);
  const b = createReportBlock();
  s.reportInto(b);
  t.equal(b.cumulativeLost, -2);
  t.equal(b.fractionLost, 0);
  t.equal(s.summary().loss_fraction, 0);
});

t.test('sequence wrap: one more cycle in the extended highest sequence number', async (t) => {
  const s = new ReceptionStats(8000);
  feed(s, inOrder(65530, 20));
  t.equal(s.extendedHighestSeq, 0x10000 + 13);
  t.equal(s.expected, 20);
  t.equal(s.lost, 0);
});

t.test('a large jump is a restart once two packets follow each other (RFC 3550 A.1)', async (t) => {
  const s = new ReceptionStats(8000);
  feed(s, inOrder(0, 10));
  feed(s, [[30000, 2000]], 7, 0);
  t.equal(s.expected, 10, 'one stray packet far ahead: not counted');
  feed(
    s,
    [
      [30001, 2020],
      [30002, 2040],
    ],
    7,
    0,
  );
  t.equal(s.expected, 2, 'the next in sequence: the source restarted there');
  t.equal(s.received, 2);
});

t.test('a new SSRC is a new source', async (t) => {
  const s = new ReceptionStats(8000);
  feed(s, inOrder(0, 10, [3]), 7);
  feed(s, inOrder(500, 5), 8);
  t.match(s.summary(), { packets_expected: 5, packets_received: 5, packets_lost: 0 });
});

t.test('interarrival jitter (RFC 3550 A.8): transit alternating by 10 ms converges to 80 units', async (t) => {
  const s = new ReceptionStats(8000);
  feed(
    s,
    Array.from({ length: 400 }, (_, i): [number, number] => [i, 1000 + i * 20 + (i % 2) * 10]),
  );
  t.ok(Math.abs(s.jitterMs - 10) < 0.5, `about 10 ms (${s.jitterMs.toFixed(2)})`);
  const b = createReportBlock();
  s.reportInto(b);
  t.ok(Math.abs(b.jitter - 80) <= 4, `in timestamp units (${b.jitter})`);
});

t.test("the peer's view of our stream from its report block", async (t) => {
  const block = { ...createReportBlock(), cumulativeLost: 3, extendedHighestSeq: 0x10000 + 99, jitter: 160 };
  t.same(peerSummary(block, 65500, 8000), {
    packets_expected: 136,
    packets_received: 133,
    packets_lost: 3,
    loss_fraction: 3 / 136,
    jitter_ms: 20,
  });
});
