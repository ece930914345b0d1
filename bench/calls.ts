// Phone calls: SIPp places N concurrent calls (N = 125, 250, 500) to an agent's number on a real Parley node (child
// process, PostgreSQL, the echo engine, the implicit loopback trunk), each streaming a recorded prompt as PCMU with
// rtp_stream and taking Parley's audio back, for a fixed window. Parley runs with ONE media worker, its process
// pinned to core 0; SIPp (and the capture) run on core 1. Side by side, in the same run: SIPp's own callee with
// -rtp_echo on core 0 (the floor), under the same caller load.
// Reported per N and server: CPU (% of one core, utime+stime of all the process's threads from /proc/<pid>/stat over
// the window), its run-queue wait, RSS per call (over the idle process), failed calls (SIPp's count), and:
// - inbound loss (caller -> server): packets the kernel dropped on the server's RTP sockets in the window
//   (/proc/net/udp `drops`), and for Parley the calls' records (analysis.rtp.inbound, whole calls, sequence gaps);
// - outbound loss (server -> caller): sequence gaps per stream in a loopback capture (tcpdump, headers only) taken
//   after the CPU window (the capture costs the sender CPU). SIPp's caller never reads its RTP socket, so loss at
//   its socket says nothing: the capture shows what the server put on the wire;
// - outbound jitter: |inter-arrival - 20 ms| of consecutive packets of each stream in that capture, p50/p99; the
//   caller's own sending jitter in the same capture tells a generator-bound run apart.
// Then call setups: short calls (1 s, same media) at rising rates (-r) on a fresh node, each rate for a few
// seconds, until calls fail: per rate, calls created per second, failed calls, time to the 200 OK p50/p99.
// Results: bench/results/calls.json.
// Usage: node --import tsx bench/calls.ts [--duration 60] [--n 125,250,500] [--repeats 1] [--capture 10]
//   [--ramp 50] [--rates 25,50,100,150,200,250,300,400] [--step 5] [--modes floor,parley] [--no-setups] [--no-write]
// Needs sipp, tcpdump, sox, taskset, PostgreSQL (as the tests), and root for the capture.
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createSocket } from 'node:dgram';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import postgres from 'postgres';
import { soundFile } from '../test/helpers/debian-packages.js';
import { USER_NODE, userEnv } from '../test/helpers/server.js';
import { createTempDatabase } from '../test/helpers/temp-database.js';
import { median } from './measure.js';

const ROOT = fileURLToPath(new URL('../', import.meta.url));
const SCENARIO = fileURLToPath(new URL('./sipp/uac_media.xml', import.meta.url));
const SOCKET_BUFFERS = fileURLToPath(new URL('./sipp/socket-buffers.py', import.meta.url));
const HOST = '127.0.0.1';

function option(name: string, fallback: number): number {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? Number(process.argv[i + 1]) : fallback;
}
function listOption<T extends string | number>(name: string, fallback: T[], parse: (s: string) => T): T[] {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1].split(',').map(parse) : fallback;
}

const DURATION_SEC = option('duration', 60);
const NS = listOption('n', [125, 250, 500], Number);
const REPEATS = option('repeats', 1);
const CAPTURE_SEC = option('capture', 10);
/** Calls per second while the N calls are set up (well under the node's setup capacity). */
const RAMP_CPS = option('ramp', 50);
const SETUP_RATES = listOption('rates', [25, 50, 100, 150, 200, 250, 300, 400], Number);
const SETUP_STEP_SEC = option('step', 5);
const MODES = listOption('modes', ['floor', 'parley'], (s) => s as Mode);
const SETUPS = !process.argv.includes('--no-setups');
const WRITE_RESULTS = !process.argv.includes('--no-write');

type Mode = 'floor' | 'parley';
const NUMBER = '+14155550100';
const PROMPT = 'tt-weasels';
/** Silence after the prompt in the looped file: the VAD ends the caller's turn and the echo engine answers. */
const PROMPT_PAD_SEC = 1.5;
const FRAME_MS = 20;
const CLK_TCK = 100; // getconf CLK_TCK
/** Idle server before the calls: its own CPU and RSS. */
const IDLE_SEC = 5;
/** After the last call is up, before the window: the first turns start. */
const SETTLE_SEC = 5;
/** The first call outlives the capture by this much. */
const HOLD_MARGIN_SEC = 5;
/** Length of each call of the setup-rate runs once answered. */
const SETUP_CALL_MS = 1000;
/** Parley's RTP ports in this benchmark: apart from the default range other nodes on the machine use. */
const RTP_PORT_MIN = 20000;
const RTP_PORT_MAX = 21999;
/** SO_RCVBUF/SO_SNDBUF SIPp asks for (net.core.rmem_max caps it): its default dropped echo packets at 500 calls. */
const SIPP_BUFFER_BYTES = 4 * 1024 * 1024;
/** Kernel buffer of the capture (KiB): 10 s of 50,000 packets/s without drops. */
const CAPTURE_BUFFER_KIB = 65536;
/** Headers only: Ethernet 14 + IPv4 20 + UDP 8 + RTP 12. */
const CAPTURE_SNAPLEN = 64;
/** Server run-queue wait (% of the window) above which the figures measure the machine's other load. */
const CONTENTION_WAIT_PCT = 20;
/** pino's warn. */
const WARN_LEVEL = 40;
const KEY = `pk_${randomBytes(32).toString('base64url')}`;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const round = (x: number, d = 1) => Math.round(x * 10 ** d) / 10 ** d;

// ---------------------------------------------------------------- processes

async function freeUdpPort(even = false): Promise<number> {
  for (;;) {
    const s = createSocket('udp4');
    await new Promise<void>((resolve) => s.bind(0, HOST, () => resolve()));
    const { port } = s.address();
    await new Promise<void>((resolve) => s.close(() => resolve()));
    // SIPp's RTP takes port and port + 2.
    if (!even || port % 2 === 0) return port;
  }
}

interface Proc {
  pid: number;
  child: ChildProcess;
  output(): string;
  waitFor(re: RegExp, ms: number): Promise<RegExpExecArray>;
  exited: Promise<number | null>;
  /** Signals it and waits for its exit (SIGKILL after `ms`). */
  stop(signal: NodeJS.Signals, ms: number): Promise<void>;
}

/** Keeps the last OUTPUT_TAIL characters of output (SIPp repaints its screen every second). */
const OUTPUT_TAIL = 200_000;

function run(cmd: string, args: string[], opts: { cwd?: string; env?: NodeJS.ProcessEnv } = {}): Proc {
  const child = spawn(cmd, args, {
    cwd: opts.cwd ?? ROOT,
    env: opts.env ?? process.env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  const waiters: (() => void)[] = [];
  const onData = (d: Buffer) => {
    out += d.toString();
    if (out.length > 2 * OUTPUT_TAIL) out = out.slice(-OUTPUT_TAIL);
    for (const w of waiters.splice(0)) w();
  };
  child.stdout!.on('data', onData);
  child.stderr!.on('data', onData);
  const exited = new Promise<number | null>((resolve) =>
    child.on('exit', (code) => {
      for (const w of waiters.splice(0)) w();
      resolve(code);
    }),
  );
  const waitFor = (re: RegExp, ms: number) =>
    new Promise<RegExpExecArray>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`${cmd}: no ${re} within ${ms} ms: ${out.slice(-2000)}`)), ms);
      const check = () => {
        const m = re.exec(out);
        if (m) {
          clearTimeout(timer);
          return resolve(m);
        }
        if (child.exitCode !== null || child.signalCode !== null) {
          clearTimeout(timer);
          return reject(new Error(`${cmd} ended before ${re}: ${out.slice(-2000)}`));
        }
        waiters.push(check);
      };
      check();
    });
  const stop = async (signal: NodeJS.Signals, ms: number) => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill(signal);
    const timer = setTimeout(() => child.kill('SIGKILL'), ms);
    await exited;
    clearTimeout(timer);
  };
  return { pid: child.pid!, child, output: () => out, waitFor, exited, stop };
}

interface Server {
  mode: Mode;
  proc: Proc;
  sipPort: number;
  /** Whether a local UDP port is one of the server's RTP sockets. */
  isRtpPort(port: number): boolean;
  /** tcpdump filter for the server's outbound RTP. */
  captureFilter: string;
  warnings(): Record<string, number>;
  /** The node's database (its call records); null for the floor. */
  sql: postgres.Sql | null;
  /** Stops it and removes what it left (the node's database and data directory). */
  close(): Promise<void>;
}

/**
 * A Parley node as `npm start` runs it, pinned to core 0 (taskset execs env, env execs node: one pid), on a database
 * and data directory of its own: no post-call jobs of an earlier run's calls to work through.
 */
async function startParley(): Promise<Server> {
  const sipPort = await freeUdpPort();
  const db = await createTempDatabase('parley_calls_bench');
  const dataDir = mkdtempSync(join(tmpdir(), 'parley-calls-bench-data-'));
  const sql = postgres(db.url, { max: 1, onnotice: () => {} });
  const cleanUp = async () => {
    await sql.end();
    await db.drop();
    rmSync(dataDir, { recursive: true, force: true });
  };
  const env = userEnv({
    DATABASE_URL: db.url,
    PARLEY_HOST: HOST,
    PARLEY_HTTP_PORT: '0',
    PARLEY_WS_PORT: '0',
    PARLEY_SIP_PORT: String(sipPort),
    PARLEY_WORKERS: '1',
    PARLEY_LOG_LEVEL: 'info',
    PARLEY_DATA_DIR: dataDir,
    PARLEY_BOOTSTRAP_API_KEY: KEY,
    PARLEY_WORKSPACE_MAX_ACTIVE_CONVERSATIONS: '100000',
    // The per-source INVITE limit (20/s by default) would measure itself, not the node: every call comes from one SIPp.
    PARLEY_SIP_INVITE_RATE_PER_SEC: '100000',
    PARLEY_SIP_INVITE_BURST: '1000000',
    PARLEY_RTP_PORT_MIN: String(RTP_PORT_MIN),
    PARLEY_RTP_PORT_MAX: String(RTP_PORT_MAX),
  });
  const [cmd, ...pre] = USER_NODE;
  const proc = run('taskset', ['-c', '0', cmd, ...pre, '--import', 'tsx', 'src/main.ts'], { env });
  const warnings: Record<string, number> = {};
  let partial = '';
  const onData = (d: Buffer) => {
    const lines = (partial + d.toString()).split('\n');
    partial = lines.pop()!;
    for (const line of lines) {
      const m = /^\{"level":(\d+).*"msg":"([^"]*)"/.exec(line);
      if (m && Number(m[1]) >= WARN_LEVEL) warnings[m[2]] = (warnings[m[2]] ?? 0) + 1;
      const dropped = /"droppedMs":(\d+)/.exec(line);
      if (dropped)
        warnings['recording: droppedMs summed'] = (warnings['recording: droppedMs summed'] ?? 0) + Number(dropped[1]);
    }
  };
  proc.child.stdout!.on('data', onData);
  proc.child.stderr!.on('data', onData);
  try {
    await proc.waitFor(/"msg":"parley ready"/, 60_000);
    const [, url] = await proc.waitFor(/"url":"(http:\/\/127\.0\.0\.1:\d+)","msg":"control plane listening"/, 1000);
    const r = await fetch(`${url}/v1/agents/upsert`, {
      method: 'PUT',
      headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        name: 'bench-phone',
        phone_number: 'custom',
        custom_phone_numbers: [NUMBER],
        audio_format: 'mulaw_8000',
      }),
    });
    if (r.status !== 200) throw new Error(`agent upsert: ${r.status} ${await r.text()}`);
  } catch (err) {
    await proc.stop('SIGKILL', 1000);
    await cleanUp();
    throw err;
  }
  return {
    mode: 'parley',
    sql,
    close: async () => {
      await proc.stop('SIGTERM', 30_000);
      await cleanUp();
    },
    proc,
    sipPort,
    isRtpPort: (p) => p >= RTP_PORT_MIN && p <= RTP_PORT_MAX && p % 2 === 0,
    captureFilter: `src portrange ${RTP_PORT_MIN}-${RTP_PORT_MAX}`,
    warnings: () => ({ ...warnings }),
  };
}

/** SIPp's callee echoing RTP on one port (-rtp_echo), pinned to core 0. */
async function startFloor(cwd: string): Promise<Server> {
  const sipPort = await freeUdpPort();
  const mediaPort = await freeUdpPort(true);
  const proc = run(
    'taskset',
    [
      '-c',
      '0',
      'sipp',
      '-sn',
      'uas',
      '-rtp_echo',
      '-i',
      HOST,
      '-p',
      `${sipPort}`,
      '-mp',
      `${mediaPort}`,
      '-nostdin',
      '-buff_size',
      `${SIPP_BUFFER_BYTES}`,
      '-rtp_buffsize',
      `${SIPP_BUFFER_BYTES}`,
      '-max_socket',
      '4096',
    ],
    { cwd },
  );
  try {
    await untilBound(sipPort, proc);
    await untilBound(mediaPort, proc);
    // -rtp_buffsize does not reach the echo socket: at 500 calls its default buffer dropped packets.
    execFileSync('python3', [SOCKET_BUFFERS, String(proc.pid), String(mediaPort), String(SIPP_BUFFER_BYTES)]);
  } catch (err) {
    await proc.stop('SIGKILL', 1000);
    throw err;
  }
  return {
    mode: 'floor',
    proc,
    sipPort,
    isRtpPort: (p) => p === mediaPort,
    captureFilter: `src port ${mediaPort}`,
    warnings: () => ({}),
    sql: null,
    close: () => proc.stop('SIGKILL', 1000),
  };
}

/** Waits (bounded) until a loopback UDP socket on `port` exists (SIPp prints nothing when not on a terminal). */
async function untilBound(port: number, proc: Proc): Promise<void> {
  for (let i = 0; i < 100; i++) {
    if (udpSockets().some((s) => s.port === port)) return;
    if (proc.child.exitCode !== null) break;
    await sleep(100);
  }
  throw new Error(`nothing bound UDP port ${port}: ${proc.output().slice(-2000)}`);
}

// ---------------------------------------------------------------- SIPp's caller

interface Caller {
  proc: Proc;
  statFile: string;
  rttFile: string;
  mediaPort: number;
}

async function startCaller(
  cwd: string,
  server: Server,
  o: { rate: number; limit: number; calls: number; holdMs: number; tag: string },
): Promise<Caller> {
  const sipPort = await freeUdpPort();
  const mediaPort = await freeUdpPort(true);
  const statFile = join(cwd, `stat-${o.tag}.csv`);
  const rttFile = join(cwd, `rtt-${o.tag}.csv`);
  const proc = run(
    'taskset',
    [
      '-c',
      '1',
      'sipp',
      `${HOST}:${server.sipPort}`,
      '-sf',
      SCENARIO,
      '-s',
      NUMBER,
      '-i',
      HOST,
      '-p',
      `${sipPort}`,
      '-mp',
      `${mediaPort}`,
      '-r',
      `${o.rate}`,
      '-rp',
      '1000',
      '-l',
      `${o.limit}`,
      '-m',
      `${o.calls}`,
      '-d',
      `${o.holdMs}`,
      '-nostdin',
      '-buff_size',
      `${SIPP_BUFFER_BYTES}`,
      '-rtp_buffsize',
      `${SIPP_BUFFER_BYTES}`,
      '-max_socket',
      '4096',
      '-trace_stat',
      '-stf',
      statFile,
      '-fd',
      '1',
      '-trace_rtt',
      '-rtt_freq',
      '1',
      '-trace_err',
      '-error_file',
      join(cwd, `errors-${o.tag}.log`),
    ],
    { cwd },
  );
  return { proc, statFile, rttFile, mediaPort };
}

/** The last line of SIPp's statistics file, by column name. */
function lastStats(file: string): Record<string, string> | null {
  if (!existsSync(file)) return null;
  const lines = readFileSync(file, 'utf8').trim().split('\n');
  if (lines.length < 2) return null;
  const head = lines[0].split(';');
  const last = lines[lines.length - 1].split(';');
  return Object.fromEntries(head.map((h, i) => [h, last[i]]));
}

/**
 * SIPp's -trace_rtt file (named after the scenario and its pid): per answered call, when its 200 OK came (ms since
 * SIPp started) and how long after the INVITE (ms).
 */
function responseTimes(cwd: string, pid: number): { at: number[]; ms: number[] } {
  const file = readdirSync(cwd).find((f) => f.endsWith(`_${pid}_rtt.csv`));
  const at: number[] = [];
  const ms: number[] = [];
  if (!file) return { at, ms };
  for (const line of readFileSync(join(cwd, file), 'utf8').trim().split('\n').slice(1)) {
    const [date, rt] = line.split(';').map(Number);
    if (Number.isFinite(date) && Number.isFinite(rt)) {
      at.push(date);
      ms.push(rt);
    }
  }
  return { at, ms };
}

// ---------------------------------------------------------------- /proc

function cpuTicks(pid: number): number {
  const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return Number(f[11]) + Number(f[12]); // utime + stime of all threads (proc(5), fields 14 and 15)
}

/** Nanoseconds the process's threads spent runnable but waiting for a CPU (schedstat field 2, summed). */
function runqueueWaitNs(pid: number): number {
  let sum = 0;
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      sum += Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ')[1]);
    } catch {
      // the thread ended between the listing and the read: its time is gone with it
    }
  }
  return sum;
}

function rssKb(pid: number): number {
  return Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]);
}

/** IPv4 UDP sockets: local port and kernel drops (`drops`: the receive buffer was full). */
function udpSockets(): { port: number; drops: number }[] {
  const out: { port: number; drops: number }[] = [];
  for (const line of readFileSync('/proc/net/udp', 'utf8').split('\n').slice(1)) {
    const f = line.trim().split(/\s+/);
    if (f.length < 13) continue;
    out.push({ port: parseInt(f[1].split(':')[1], 16), drops: Number(f[12]) });
  }
  return out;
}

/** Kernel drops summed over the UDP sockets whose port matches. */
function udpDrops(match: (port: number) => boolean): number {
  return udpSockets().reduce((sum, s) => sum + (match(s.port) ? s.drops : 0), 0);
}

// ---------------------------------------------------------------- capture

interface StreamStats {
  streams: number;
  packets: number;
  /** Sequence numbers missing inside each stream's span in the capture. */
  lost: number;
  /** |inter-arrival - 20 ms| of consecutive packets (sequence + 1), ms. */
  jitter: number[];
}

/** Captures UDP on loopback matching `filter` for `sec` seconds (tcpdump on core 1); returns the file and its drops. */
async function capture(
  dir: string,
  filter: string,
  sec: number,
): Promise<{ file: string; kernelDrops: number | null }> {
  const file = join(dir, `capture-${Date.now()}.pcap`);
  const proc = run('taskset', [
    '-c',
    '1',
    'tcpdump',
    '-i',
    'lo',
    '-n',
    '-s',
    `${CAPTURE_SNAPLEN}`,
    '-B',
    `${CAPTURE_BUFFER_KIB}`,
    '--time-stamp-precision',
    'nano',
    '-w',
    file,
    `udp and (${filter})`,
  ]);
  await proc.waitFor(/listening on/, 10_000);
  await sleep(sec * 1000);
  await proc.stop('SIGINT', 10_000);
  const m = /(\d+) packets? dropped by kernel/.exec(proc.output());
  return { file, kernelDrops: m ? Number(m[1]) : null };
}

/** Per source port and SSRC: packets, sequence gaps and inter-arrival jitter, from a pcap (nanosecond stamps). */
function streamStats(file: string, fromPort: (port: number) => boolean): StreamStats {
  const buf = readFileSync(file);
  const magic = buf.readUInt32LE(0);
  const le = magic === 0xa1b23c4d || magic === 0xa1b2c3d4;
  const u32 = (o: number) => (le ? buf.readUInt32LE(o) : buf.readUInt32BE(o));
  const nano = magic === 0xa1b23c4d || magic === 0x4d3cb2a1;
  const linkType = u32(20);
  // DLT_EN10MB (loopback on Linux), DLT_LINUX_SLL (any), DLT_NULL
  const linkBytes = linkType === 1 ? 14 : linkType === 113 ? 16 : linkType === 0 ? 4 : -1;
  if (linkBytes < 0) throw new Error(`capture link type ${linkType} not handled`);
  interface S {
    lastMs: number;
    lastSeq: number;
    first: number;
    highest: number;
    count: number;
  }
  const streams = new Map<string, S>();
  const jitter: number[] = [];
  let packets = 0;
  for (let off = 24; off + 16 <= buf.length;) {
    const ms = u32(off) * 1000 + u32(off + 4) / (nano ? 1e6 : 1e3);
    const capLen = u32(off + 8);
    const p = off + 16;
    off = p + capLen;
    const ip = p + linkBytes;
    if (buf[ip] >> 4 !== 4 || capLen < linkBytes + 20 + 8 + 12) continue;
    const udp = ip + (buf[ip] & 0x0f) * 4;
    const src = buf.readUInt16BE(udp);
    if (!fromPort(src)) continue;
    const rtp = udp + 8;
    if (buf[rtp] >> 6 !== 2) continue; // RTP version 2 only (not RTCP on the odd ports)
    const pt = buf[rtp + 1] & 0x7f;
    if (pt >= 72 && pt <= 76) continue; // RTCP (RFC 5761 4)
    const seq = buf.readUInt16BE(rtp + 2);
    const key = `${src}/${buf.readUInt32BE(rtp + 8)}`;
    packets++;
    const s = streams.get(key);
    if (!s) {
      streams.set(key, { lastMs: ms, lastSeq: seq, first: seq, highest: seq, count: 1 });
      continue;
    }
    // Extended sequence number (RFC 3550 A.1, without the resync): wraps forward only.
    let ext = (s.highest & ~0xffff) | seq;
    if (ext < s.highest - 0x8000) ext += 0x10000;
    if (ext === s.lastSeq + 1) jitter.push(Math.abs(ms - s.lastMs - FRAME_MS));
    if (ext > s.highest) s.highest = ext;
    s.lastSeq = ext;
    s.lastMs = ms;
    s.count++;
  }
  let lost = 0;
  for (const s of streams.values()) lost += Math.max(0, s.highest - s.first + 1 - s.count);
  return { streams: streams.size, packets, lost, jitter };
}

function quantile(xs: number[], q: number): number | null {
  if (xs.length === 0) return null;
  const s = Float64Array.from(xs).sort();
  return round(s[Math.min(s.length - 1, Math.floor(q * s.length))], 3);
}

// ---------------------------------------------------------------- one load run

interface LoadRun {
  mode: Mode;
  n: number;
  repeat: number;
  calls_up: number;
  successful_calls: number;
  failed_calls: number;
  cpu_pct_of_core: number;
  idle_cpu_pct_of_core: number;
  runqueue_wait_pct: number;
  contention_bound: boolean;
  load_average_1m: number;
  rss_idle_mb: number;
  rss_mb: number;
  rss_per_call_kb: number;
  inbound_kernel_drops_in_window: number;
  inbound_kernel_drops_in_capture: number;
  inbound_record: { packets_expected: number; packets_lost: number; calls: number } | null;
  outbound_capture: { sec: number; streams: number; packets: number; lost: number; capture_drops: number | null };
  outbound_jitter_ms: { p50: number | null; p99: number | null; max: number | null; samples: number };
  caller_send_jitter_ms: { p50: number | null; p99: number | null; max: number | null; samples: number };
  /** The server's log lines at warn or above, by message. */
  warnings: Record<string, number>;
}

async function loadRun(mode: Mode, n: number, repeat: number, ctx: { dir: string }): Promise<LoadRun> {
  const server = mode === 'parley' ? await startParley() : await startFloor(ctx.dir);
  try {
    const idleTicks0 = cpuTicks(server.proc.pid);
    const idleT0 = performance.now();
    await sleep(IDLE_SEC * 1000);
    const idleCpu = ((cpuTicks(server.proc.pid) - idleTicks0) / CLK_TCK / ((performance.now() - idleT0) / 1000)) * 100;
    const rssIdle = rssKb(server.proc.pid);
    const rampSec = n / RAMP_CPS;
    const holdMs = Math.round((rampSec + SETTLE_SEC + DURATION_SEC + CAPTURE_SEC + HOLD_MARGIN_SEC) * 1000);
    const caller = await startCaller(ctx.dir, server, {
      rate: RAMP_CPS,
      limit: n,
      calls: n,
      holdMs,
      tag: `${mode}-${n}-${repeat}`,
    });
    // Every call up (or the ramp long over): SIPp's statistics, once a second.
    const upBy = Date.now() + (rampSec + 20) * 1000;
    let up = 0;
    while (Date.now() < upBy) {
      await sleep(500);
      const st = lastStats(caller.statFile);
      up = Number(st?.['CurrentCall'] ?? 0);
      if (Number(st?.['TotalCallCreated'] ?? 0) >= n) break;
    }
    await sleep(SETTLE_SEC * 1000);
    up = Number(lastStats(caller.statFile)?.['CurrentCall'] ?? 0);

    const pid = server.proc.pid;
    const t0 = performance.now();
    const ticks0 = cpuTicks(pid);
    const wait0 = runqueueWaitNs(pid);
    const drops0 = udpDrops(server.isRtpPort);
    await sleep(DURATION_SEC * 1000);
    const windowSec = (performance.now() - t0) / 1000;
    const cpu = ((cpuTicks(pid) - ticks0) / CLK_TCK / windowSec) * 100;
    const waitPct = ((runqueueWaitNs(pid) - wait0) / 1e9 / windowSec) * 100;
    const drops = udpDrops(server.isRtpPort) - drops0;
    const rss = rssKb(pid);
    const load = loadavg()[0];

    const drops1 = udpDrops(server.isRtpPort);
    const cap = await capture(ctx.dir, `${server.captureFilter} or src port ${caller.mediaPort}`, CAPTURE_SEC);
    const out = streamStats(cap.file, (p) => p !== caller.mediaPort);
    const sent = streamStats(cap.file, (p) => p === caller.mediaPort);
    rmSync(cap.file, { force: true });
    const dropsInCapture = udpDrops(server.isRtpPort) - drops1;

    await caller.proc.exited;
    const st = lastStats(caller.statFile);
    const successful = Number(st?.['SuccessfulCall(C)'] ?? 0);
    const failed = Number(st?.['FailedCall(C)'] ?? n);

    let record: LoadRun['inbound_record'] = null;
    const sql = server.sql;
    if (sql) {
      // The calls' records, once finished (each carries the inbound statistics of its whole call).
      const rows = async () =>
        sql<
          { rtp_stats: { inbound: { packets_expected: number; packets_lost: number } } | null; ended_at: Date | null }[]
        >`
          select rtp_stats, ended_at from conversations where origin = 'telephony-inbound'`;
      let rs = await rows();
      for (let i = 0; i < 60 && rs.some((r) => r.ended_at === null || r.rtp_stats === null); i++) {
        await sleep(500);
        rs = await rows();
      }
      const done = rs.filter((r) => r.rtp_stats);
      record = {
        calls: done.length,
        packets_expected: done.reduce((a, r) => a + r.rtp_stats!.inbound.packets_expected, 0),
        packets_lost: done.reduce((a, r) => a + r.rtp_stats!.inbound.packets_lost, 0),
      };
    }
    const summary = (xs: number[]) => ({
      p50: quantile(xs, 0.5),
      p99: quantile(xs, 0.99),
      max: quantile(xs, 1),
      samples: xs.length,
    });
    const result: LoadRun = {
      mode,
      n,
      repeat,
      calls_up: up,
      successful_calls: successful,
      failed_calls: failed,
      cpu_pct_of_core: round(cpu),
      idle_cpu_pct_of_core: round(idleCpu),
      runqueue_wait_pct: round(waitPct),
      contention_bound: waitPct > CONTENTION_WAIT_PCT,
      load_average_1m: round(load, 2),
      rss_idle_mb: Math.round(rssIdle / 1024),
      rss_mb: Math.round(rss / 1024),
      rss_per_call_kb: Math.round((rss - rssIdle) / n),
      inbound_kernel_drops_in_window: drops,
      inbound_kernel_drops_in_capture: dropsInCapture,
      inbound_record: record,
      outbound_capture: {
        sec: CAPTURE_SEC,
        streams: out.streams,
        packets: out.packets,
        lost: out.lost,
        capture_drops: cap.kernelDrops,
      },
      outbound_jitter_ms: summary(out.jitter),
      caller_send_jitter_ms: summary(sent.jitter),
      warnings: server.warnings(),
    };
    console.log(JSON.stringify(result));
    return result;
  } finally {
    await server.close();
  }
}

// ---------------------------------------------------------------- setup rate

interface SetupStep {
  rate: number;
  calls: number;
  /** 200 OKs received per second, from the first to the last. */
  answered_per_sec: number | null;
  successful_calls: number;
  failed_calls: number;
  to_200_ok_ms: { p50: number | null; p99: number | null; max: number | null };
}

async function setupRun(ctx: { dir: string }): Promise<SetupStep[]> {
  const server = await startParley();
  const steps: SetupStep[] = [];
  try {
    for (const rate of SETUP_RATES) {
      const calls = rate * SETUP_STEP_SEC;
      const caller = await startCaller(ctx.dir, server, {
        rate,
        limit: calls,
        calls,
        holdMs: SETUP_CALL_MS,
        tag: `setup-${rate}`,
      });
      await caller.proc.exited;
      const st = lastStats(caller.statFile);
      const rtt = responseTimes(ctx.dir, caller.proc.pid);
      const span = rtt.at.length > 1 ? (Math.max(...rtt.at) - Math.min(...rtt.at)) / 1000 : 0;
      const step: SetupStep = {
        rate,
        calls,
        answered_per_sec: span > 0 ? round((rtt.at.length - 1) / span) : null,
        successful_calls: Number(st?.['SuccessfulCall(C)'] ?? 0),
        failed_calls: Number(st?.['FailedCall(C)'] ?? calls),
        to_200_ok_ms: { p50: quantile(rtt.ms, 0.5), p99: quantile(rtt.ms, 0.99), max: quantile(rtt.ms, 1) },
      };
      console.log(JSON.stringify({ setup: step }));
      steps.push(step);
      if (step.failed_calls > 0) break;
      await sleep(3000); // the step's calls end and their records are written
    }
  } finally {
    await server.close();
  }
  return steps;
}

// ---------------------------------------------------------------- orchestration

async function main(): Promise<void> {
  execFileSync('taskset', ['-cp', '1', String(process.pid)], { stdio: 'ignore' });
  const dir = mkdtempSync(join(tmpdir(), 'parley-calls-bench-'));
  // The caller's looped stream: a prompt, then silence (the caller's turn ends and the echo answers).
  execFileSync('sox', [
    soundFile(PROMPT),
    '-r',
    '8000',
    '-c',
    '1',
    '-t',
    'ul',
    join(dir, 'speech.ul'),
    'pad',
    '0',
    `${PROMPT_PAD_SEC}`,
  ]);
  const ctx = { dir };
  const runs: LoadRun[] = [];
  let setups: SetupStep[] = [];
  try {
    // Written after every run: a long session interrupted keeps what it measured.
    for (let r = 0; r < REPEATS; r++) {
      for (const n of NS) {
        for (const mode of MODES) {
          runs.push(await loadRun(mode, n, r, ctx));
          report(runs, setups, false);
        }
      }
    }
    if (SETUPS) setups = await setupRun(ctx);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  report(runs, setups, true);
}

/** Packets in the capture, % of one per stream and frame. */
function sentPct(x: LoadRun): number | null {
  const c = x.outbound_capture;
  return c.streams ? round((c.packets / (c.streams * c.sec * (1000 / FRAME_MS))) * 100) : null;
}

interface Header {
  commit: string;
  date: string;
  setup: Record<string, unknown>;
}

function report(runs: LoadRun[], setups: SetupStep[], complete: boolean, saved?: Header): void {
  const summary = NS.map((n) => {
    const of = (mode: Mode) => runs.filter((x) => x.n === n && x.mode === mode);
    const med = (xs: LoadRun[], f: (x: LoadRun) => number | null) => {
      const v = xs.map(f).filter((x): x is number => x !== null);
      return v.length ? round(median(v), 2) : null;
    };
    const p = of('parley');
    const f = of('floor');
    const pCpu = med(p, (x) => x.cpu_pct_of_core);
    const fCpu = med(f, (x) => x.cpu_pct_of_core);
    return {
      n,
      repeats: Math.max(p.length, f.length),
      parley_cpu_pct: pCpu,
      floor_cpu_pct: fCpu,
      cpu_ratio_to_floor: pCpu !== null && fCpu ? round(pCpu / fCpu, 2) : null,
      parley_runqueue_wait_pct: med(p, (x) => x.runqueue_wait_pct),
      floor_runqueue_wait_pct: med(f, (x) => x.runqueue_wait_pct),
      load_average_1m: med([...p, ...f], (x) => x.load_average_1m),
      parley_rss_per_call_kb: med(p, (x) => x.rss_per_call_kb),
      floor_rss_per_call_kb: med(f, (x) => x.rss_per_call_kb),
      parley_inbound_lost_record: med(p, (x) => x.inbound_record?.packets_lost ?? null),
      parley_inbound_expected_record: med(p, (x) => x.inbound_record?.packets_expected ?? null),
      parley_inbound_kernel_drops: med(p, (x) => x.inbound_kernel_drops_in_window),
      floor_inbound_kernel_drops: med(f, (x) => x.inbound_kernel_drops_in_window),
      // Frames the server did not send at all (its pacing clock skips what a stall left behind, and the sequence
      // numbers stay continuous): packets in the capture against 50 per stream and second.
      parley_outbound_sent_pct: med(p, sentPct),
      floor_outbound_sent_pct: med(f, sentPct),
      parley_outbound_lost_capture: med(p, (x) => x.outbound_capture.lost),
      floor_outbound_lost_capture: med(f, (x) => x.outbound_capture.lost),
      parley_outbound_jitter_p50_ms: med(p, (x) => x.outbound_jitter_ms.p50),
      parley_outbound_jitter_p99_ms: med(p, (x) => x.outbound_jitter_ms.p99),
      floor_outbound_jitter_p50_ms: med(f, (x) => x.outbound_jitter_ms.p50),
      floor_outbound_jitter_p99_ms: med(f, (x) => x.outbound_jitter_ms.p99),
      caller_send_jitter_p99_ms: med([...p, ...f], (x) => x.caller_send_jitter_ms.p99),
      parley_failed_calls: med(p, (x) => x.failed_calls),
      floor_failed_calls: med(f, (x) => x.failed_calls),
    };
  });
  const maxClean = setups.filter((s) => s.failed_calls === 0).at(-1);
  const measured = {
    cpu: 'utime+stime of all the server process threads (/proc/<pid>/stat) over the window, % of one core',
    rss_per_call: '(VmRSS at the end of the window - VmRSS idle before the calls) / N',
    inbound_loss:
      'kernel drops on the server RTP sockets over the window (/proc/net/udp drops); Parley also: its records, analysis.rtp.inbound over whole calls',
    outbound_loss:
      'sequence gaps per stream in a loopback capture after the window (SIPp never reads its RTP socket: loss there says nothing)',
    outbound_sent:
      'packets in that capture / (streams x seconds x 50): frames the server never sent (its pacing clock skips what a stall left behind; sequence numbers stay continuous)',
    jitter: '|inter-arrival - 20 ms| of consecutive packets per stream in that capture',
    setups: `calls of ${SETUP_CALL_MS} ms with the same media at each rate for ${SETUP_STEP_SEC} s on a fresh node, until calls fail; time to the 200 OK from SIPp -trace_rtt`,
  };
  const result = {
    bench: 'calls',
    complete,
    commit: saved?.commit ?? execFileSync('git', ['rev-parse', 'HEAD'], { cwd: ROOT, encoding: 'utf8' }).trim(),
    date: saved?.date ?? new Date().toISOString(),
    setup: saved
      ? { ...saved.setup, measured }
      : {
          server:
            'Parley (npm start, one media worker: PARLEY_WORKERS=1) pinned to core 0 (taskset -c 0), echo engine, agent audio_format mulaw_8000 (other agent settings default)',
          floor: 'sipp -sn uas -rtp_echo pinned to core 0',
          caller: `SIPp ${SCENARIO.split('/bench/')[1]} pinned to core 1: PCMU, rtp_stream of ${PROMPT} + ${PROMPT_PAD_SEC} s silence looped; ramp ${RAMP_CPS} calls/s`,
          window_sec: DURATION_SEC,
          capture_sec: CAPTURE_SEC,
          sipp_buffers_bytes: SIPP_BUFFER_BYTES,
          repeats: REPEATS,
          cpus: cpus().length,
          load_average_at_end: loadavg().map((x) => round(x, 2)),
          measured,
        },
    summary,
    setups: {
      steps: setups,
      highest_rate_without_failures: maxClean?.rate ?? null,
      answered_per_sec_at_it: maxClean?.answered_per_sec ?? null,
    },
    runs,
  };
  if (complete) console.log(JSON.stringify({ summary, setups: result.setups }, null, 2));
  if (!WRITE_RESULTS) return;
  mkdirSync(new URL('./results/', import.meta.url), { recursive: true });
  writeFileSync(new URL('./results/calls.json', import.meta.url), `${JSON.stringify(result, null, 2)}\n`);
}

if (process.argv.includes('--from-results')) {
  // Summarises bench/results/calls.json's runs again (its own setup, commit and date kept).
  type Saved = Header & { runs: LoadRun[]; setups: { steps: SetupStep[] }; complete: boolean };
  const saved = JSON.parse(readFileSync(new URL('./results/calls.json', import.meta.url), 'utf8')) as Saved;
  report(saved.runs, saved.setups.steps, saved.complete, saved);
} else {
  await main();
}
