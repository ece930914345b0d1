// SIP stack benchmark: parse and serialize throughput (messages per second on one core), and the
// signalling-only call rate of the test agent under SIPp's built-in uac scenario (calls per second,
// agent pinned to CPU 0 and SIPp to CPU 1 with taskset, no media). Writes bench/results/sip-stack.json.
//   node --import tsx bench/sip.ts [--rates 300,500,700] [--calls 3000]

import { spawn } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync, existsSync, mkdtempSync } from 'node:fs';
import { tmpdir, cpus, loadavg } from 'node:os';
import { join } from 'node:path';
import { parseMessage } from '../sip/message/parser.js';
import { serializeMessage } from '../sip/message/serializer.js';

const AGENT_PORT = 15300;
const SIPP_PORT = 15301;
const RUNS = 5;

const INVITE = [
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
  'Content-Length: 129',
  '',
  'v=0\r\no=user1 53655765 2353687637 IN IP4 127.0.0.1\r\ns=-\r\nc=IN IP4 127.0.0.1\r\nt=0 0\r\nm=audio 6000 RTP/AVP 0\r\na=rtpmap:0 PCMU/8000\r\n',
].join('\r\n');

function arg(name: string, fallback: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : fallback;
}

/** utime + stime of a process from /proc (clock ticks of 1/100 s on Linux). */
function cpuSeconds(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
}

function throughput(fn: () => void, ms: number): number {
  for (let i = 0; i < 2000; i++) fn(); // warm up
  let n = 0;
  const start = performance.now();
  let now = start;
  while (now - start < ms) {
    for (let i = 0; i < 500; i++) fn();
    n += 500;
    now = performance.now();
  }
  return (n * 1000) / (now - start);
}

function micro(): { parse_per_s: number; serialize_per_s: number; runs: number; message_bytes: number } {
  const bytes = Buffer.from(INVITE);
  const parsed = parseMessage(bytes);
  const parse: number[] = [];
  const serialize: number[] = [];
  for (let r = 0; r < RUNS; r++) {
    parse.push(throughput(() => parseMessage(bytes), 400));
    serialize.push(throughput(() => serializeMessage(parsed), 400));
  }
  return {
    parse_per_s: Math.round(median(parse)),
    serialize_per_s: Math.round(median(serialize)),
    runs: RUNS,
    message_bytes: bytes.length,
  };
}

async function callRate(rate: number, calls: number): Promise<Record<string, unknown>> {
  const dir = mkdtempSync(join(tmpdir(), 'parley-bench-sip-'));
  const agent = spawn(
    'taskset',
    ['-c', '0', process.execPath, '--import', 'tsx', 'test/sip/peers/test-agent.ts', '--port', `${AGENT_PORT}`],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  let agentOut = '';
  agent.stdout.on('data', (d: Buffer) => {
    agentOut += d.toString();
  });
  const deadline = Date.now() + 15_000;
  while (!agentOut.includes('listening')) {
    if (Date.now() > deadline || agent.exitCode !== null) throw new Error(`test agent did not start: ${agentOut}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  const stat = join(dir, 'stat.csv');
  const cpuBefore = cpuSeconds(agent.pid!);
  const started = performance.now();
  const sipp = spawn(
    'taskset',
    [
      '-c',
      '1',
      'sipp',
      '-sn',
      'uac',
      '-i',
      '127.0.0.1',
      '-p',
      `${SIPP_PORT}`,
      '-mp',
      '30870',
      `127.0.0.1:${AGENT_PORT}`,
      '-r',
      `${rate}`,
      '-m',
      `${calls}`,
      '-l',
      `${rate * 2}`,
      '-d',
      '0',
      '-nostdin',
      '-timeout',
      '120s',
      '-trace_stat',
      '-stf',
      stat,
      '-fd',
      '1',
      '-max_socket',
      '1000',
    ],
    { stdio: 'ignore' },
  );
  const code = await new Promise<number | null>((r) => sipp.on('exit', r));
  const elapsedS = (performance.now() - started) / 1000;
  const agentCpuS = cpuSeconds(agent.pid!) - cpuBefore;
  agent.kill('SIGTERM');
  await new Promise((r) => agent.on('exit', r));
  const lines = existsSync(stat) ? readFileSync(stat, 'utf8').trim().split('\n') : [];
  const names = lines[0]?.split(';') ?? [];
  const last = lines.at(-1)?.split(';') ?? [];
  const get = (n: string) => Number(last[names.indexOf(n)]);
  const success = get('SuccessfulCall(C)');
  return {
    target_cps: rate,
    calls,
    successful: success,
    failed: get('FailedCall(C)'),
    failure_kinds: Object.fromEntries(
      names
        .filter((n) => n.startsWith('Failed') && n.endsWith('(C)') && n !== 'FailedCall(C)' && get(n) > 0)
        .map((n) => [n, get(n)]),
    ),
    dead_call_msgs: get('DeadCallMsgs(C)'),
    out_of_call_msgs: get('OutOfCallMsgs(C)'),
    retransmissions: get('Retransmissions(C)'),
    achieved_cps: Math.round((success / elapsedS) * 10) / 10,
    sipp_reported_cps: Number((last[names.indexOf('CallRate(C)')] ?? '0').replace(',', '.')),
    sipp_exit: code ?? 'killed',
    elapsed_s: Math.round(elapsedS * 100) / 100,
    agent_cpu_s: Math.round(agentCpuS * 100) / 100,
    // Calls the agent completes per second of its own CPU time: the rate one dedicated core sustains.
    calls_per_agent_cpu_s: agentCpuS > 0 ? Math.round(success / agentCpuS) : 0,
  };
}

const rates = arg('rates', '300,500,700').split(',').map(Number);
const calls = Number(arg('calls', '3000'));
const parseResult = micro();
console.log('parse/serialize (INVITE with SDP, msgs/s, median of runs):', parseResult);
const rateResults = [];
for (const rate of rates) {
  const r = await callRate(rate, Math.max(calls, rate * 4));
  console.log('call rate:', r);
  rateResults.push(r);
}
const clean = rateResults.filter((r) => r.failed === 0 && r.successful === r.calls);
const result = {
  name: 'sip-stack',
  date: new Date().toISOString(),
  machine: {
    cpus: cpus().length,
    model: cpus()[0]?.model,
    node: process.version,
    load_avg_1m_at_end: Math.round(loadavg()[0] * 100) / 100,
  },
  method:
    'parse/serialize: one INVITE with SDP in a tight loop, median of 5 runs of 400 ms. Call rate: SIPp built-in uac (INVITE/100/200/ACK/BYE/200, -d 0) at a fixed rate against test/sip/peers/test-agent.ts, agent on CPU 0, SIPp on CPU 1 (taskset); no media.',
  parse_serialize: parseResult,
  call_rate: rateResults,
  best_clean_cps: clean.length > 0 ? Math.max(...clean.map((r) => Number(r.achieved_cps))) : 0,
  median_calls_per_agent_cpu_s: median(rateResults.map((r) => Number(r.calls_per_agent_cpu_s))),
  goal_cps: 500,
};
mkdirSync('bench/results', { recursive: true });
writeFileSync('bench/results/sip-stack.json', JSON.stringify(result, null, 2) + '\n');
console.log(
  `best clean call rate ${result.best_clean_cps} cps (goal ${result.goal_cps}), ${result.median_calls_per_agent_cpu_s} calls per agent CPU second; wrote bench/results/sip-stack.json`,
);
