// SIP message micro-benchmark: parse and serialize throughput (messages per second on one core) for the
// messages a call carries (INVITE with SDP, 200 OK with SDP, BYE), plus the header reads the transaction
// layer does per message, and the TCP stream framer. Median of RUNS runs. Writes bench/results/sip-parse.json.
//   node --import tsx bench/sip-parse.ts [--ms 400]
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { cseqOf, parseMessage, serializeMessage, StreamFramer, topVia, type SipMessage } from '../sip/message/index.js';

const RUNS = 5;
const argMs = process.argv.indexOf('--ms');
const RUN_MS = argMs >= 0 ? Number(process.argv[argMs + 1]) : 400;

const SDP =
  'v=0\r\no=user1 53655765 2353687637 IN IP4 127.0.0.1\r\ns=-\r\nc=IN IP4 127.0.0.1\r\nt=0 0\r\nm=audio 6000 RTP/AVP 0\r\na=rtpmap:0 PCMU/8000\r\n';
const MESSAGES: Record<string, Buffer> = {
  invite: Buffer.from(
    [
      'INVITE sip:service@127.0.0.1:5060 SIP/2.0',
      'Via: SIP/2.0/UDP 127.0.0.1:5061;branch=z9hG4bK-1234-1-0;rport',
      'From: sipp <sip:sipp@127.0.0.1:5061>;tag=1234SIPpTag001',
      'To: service <sip:service@127.0.0.1:5060>',
      'Call-ID: 1-1234@127.0.0.1',
      'CSeq: 1 INVITE',
      'Contact: sip:sipp@127.0.0.1:5061',
      'Max-Forwards: 70',
      'Subject: Performance Test',
      'Content-Type: application/sdp',
      `Content-Length: ${SDP.length}`,
      '',
      SDP,
    ].join('\r\n'),
  ),
  ok: Buffer.from(
    [
      'SIP/2.0 200 OK',
      'Via: SIP/2.0/UDP 127.0.0.1:5061;branch=z9hG4bK-1234-1-0;rport=5061;received=127.0.0.1',
      'From: sipp <sip:sipp@127.0.0.1:5061>;tag=1234SIPpTag001',
      'To: service <sip:service@127.0.0.1:5060>;tag=9a8b7c',
      'Call-ID: 1-1234@127.0.0.1',
      'CSeq: 1 INVITE',
      'Contact: <sip:service@127.0.0.1:5060>',
      'Allow: INVITE, ACK, CANCEL, BYE, OPTIONS, INFO, REFER, NOTIFY',
      'Supported: timer, replaces',
      'Content-Type: application/sdp',
      `Content-Length: ${SDP.length}`,
      '',
      SDP,
    ].join('\r\n'),
  ),
  bye: Buffer.from(
    [
      'BYE sip:service@127.0.0.1:5060 SIP/2.0',
      'Via: SIP/2.0/UDP 127.0.0.1:5061;branch=z9hG4bK-1234-1-7;rport',
      'From: sipp <sip:sipp@127.0.0.1:5061>;tag=1234SIPpTag001',
      'To: service <sip:service@127.0.0.1:5060>;tag=9a8b7c',
      'Call-ID: 1-1234@127.0.0.1',
      'CSeq: 2 BYE',
      'Max-Forwards: 70',
      'Content-Length: 0',
      '',
      '',
    ].join('\r\n'),
  ),
};

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
}

/**
 * Operations per second of fn over RUN_MS of wall time, after a warm-up: per wall second and per CPU second
 * of this process (process.cpuUsage), the figure that holds on a machine shared with other work.
 */
function rate(fn: () => void): { wall: number; cpu: number } {
  for (let i = 0; i < 3000; i++) fn();
  let n = 0;
  const cpu0 = process.cpuUsage();
  const start = performance.now();
  let now = start;
  while (now - start < RUN_MS) {
    for (let i = 0; i < 500; i++) fn();
    n += 500;
    now = performance.now();
  }
  const cpu = process.cpuUsage(cpu0);
  return { wall: (n * 1000) / (now - start), cpu: (n * 1e6) / (cpu.user + cpu.system) };
}

function measure(fn: () => void): { per_cpu_s: number; per_wall_s: number; runs_per_cpu_s: number[] } {
  const runs: Array<{ wall: number; cpu: number }> = [];
  for (let r = 0; r < RUNS; r++) runs.push(rate(fn));
  return {
    per_cpu_s: Math.round(median(runs.map((x) => x.cpu))),
    per_wall_s: Math.round(median(runs.map((x) => x.wall))),
    runs_per_cpu_s: runs.map((x) => Math.round(x.cpu)),
  };
}

let sink = 0;
const results: Record<string, unknown> = {};
for (const [name, bytes] of Object.entries(MESSAGES)) {
  const parsed: SipMessage = parseMessage(bytes);
  results[name] = {
    bytes: bytes.length,
    parse: measure(() => {
      sink += parseMessage(bytes).headers.size;
    }),
    // what the transaction layer reads per message: top Via (branch) and CSeq
    parse_and_route: measure(() => {
      const m = parseMessage(bytes);
      sink += topVia(m).params.size + cseqOf(m).seq;
    }),
    serialize: measure(() => {
      sink += serializeMessage(parsed).length;
    }),
  };
}
// stream framing: 50 messages per push, as over a busy TCP connection
const stream = Buffer.concat(Array.from({ length: 50 }, (_, i) => Object.values(MESSAGES)[i % 3]));
const framer = new StreamFramer({
  message: () => {
    sink++;
  },
  invalid: () => undefined,
  fatal: () => undefined,
  ping: () => undefined,
  pong: () => undefined,
});
const framed = measure(() => framer.push(stream));
results.tcp_framer = { messages_per_push: 50, pushes: framed, messages_per_cpu_s: framed.per_cpu_s * 50 };

const out = {
  name: 'sip-parse',
  date: new Date().toISOString(),
  machine: {
    cpus: cpus().length,
    model: cpus()[0]?.model,
    node: process.version,
    load_avg_1m_at_end: Number(loadavg()[0].toFixed(2)),
  },
  method: `one message in a tight loop on one core, median of ${RUNS} runs of ${RUN_MS} ms after a warm-up; per_cpu_s divides by the CPU time this process used (process.cpuUsage), per_wall_s by elapsed time, which a loaded machine (see load average) depresses`,
  results,
};
mkdirSync(new URL('./results/', import.meta.url), { recursive: true });
writeFileSync(new URL('./results/sip-parse.json', import.meta.url), JSON.stringify(out, null, 2) + '\n');
for (const [name, r] of Object.entries(results)) console.log(name, JSON.stringify(r));
if (sink === -1) console.log('unreachable');
