// STS WebSocket load: N concurrent clients streaming 20 ms frames at real time through the echo engine, barge-in in a
// share of turns. Parley runs with ONE media worker, its process pinned to core 0; this process is the generator,
// pinned to core 1: a lean client on raw TCP sockets (pre-built masked frames, one deadline scheduler) that reports
// its own lateness, so generator-bound figures can be told apart. Side by side: a bare uWebSockets.js server that
// only echoes the same messages (the floor).
// Reported per N: server CPU (% of one core), RSS per conversation, turn latency (user_finished_speaking ->
// first assistant frame, as the client sees it) p50/p99, user_finished_speaking after the end of the last voiced
// frame plus the configured silence (vad_min_silence_duration_ms), outbound frame jitter (|inter-arrival - 20 ms|
// at the client, so it includes the generator's own lateness) p50/p99, generator lateness p50/p99/max.
// Parley runs with --trace-gc: the media worker's scavenges and mark-compacts in the window, their pauses, and the
// longest marking cycle (wall), which on one pinned core is time the worker shares with the marking threads; the
// other isolates' (main, tsx's loader threads: idle then) apart.
// Results: bench/results/sts.json.
// Usage: node --import tsx bench/sts.ts      Env: STS_N ("100,250,500,1000"), STS_WINDOW_SEC (15), STS_BARGE (0.2),
//   STS_MODES ("floor,parley": which servers run), STS_PARLEY_NODE_ARGS (extra node flags for the Parley server,
//   e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof" to profile it), STS_NO_WRITE=1 (print only, no results file),
//   STS_GC_LOG=1 (the --trace-gc lines of the window to stderr), STS_CONFIG (JSON: extra fields of every client's
//   config message, e.g. '{"audio_speed":1}'; a run with it is not the benchmark's and should not be written).
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import net from 'node:net';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { soundFile } from '../test/helpers/debian-packages.js';

const SELF = fileURLToPath(import.meta.url);
const HOST = '127.0.0.1';
const FRAME_MS = 20;
const RATE = 8000;
const FRAME_BYTES = ((RATE * FRAME_MS) / 1000) * 2; // pcm_8000, 16-bit
const PROMPTS = ['tt-weasels', 'vm-goodbye', 'agent-pass', 'demo-congrats'].map(soundFile);
const MIN_SILENCE_MS = 500; // vad_min_silence_duration_ms sent in config
const NS = (process.env.STS_N ?? '100,250,500,1000').split(',').map(Number);
const WINDOW_SEC = Number(process.env.STS_WINDOW_SEC ?? 15);
const BARGE_SHARE = Number(process.env.STS_BARGE ?? 0.2);
const MODES = (process.env.STS_MODES ?? 'floor,parley').split(',') as ('floor' | 'parley')[];
const PARLEY_NODE_ARGS = (process.env.STS_PARLEY_NODE_ARGS ?? '').split(' ').filter(Boolean);
const WRITE_RESULTS = process.env.STS_NO_WRITE !== '1';
/** Extra `config` fields for every Parley client (e.g. '{"audio_speed":1}'): what a setting costs. */
const CONFIG_EXTRA = JSON.parse(process.env.STS_CONFIG ?? '{}') as Record<string, unknown>;
const GC_LOG = process.env.STS_GC_LOG === '1';
const CLK_TCK = 100; // getconf CLK_TCK
/**
 * Server run-queue wait (% of the window) above which a run's CPU and latency figures measure the machine's other
 * load, not the server: its threads waited for a core that long.
 */
const CONTENTION_WAIT_PCT = 20;
const PG_ADMIN = process.env.PARLEY_TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

// ---------------------------------------------------------------- servers (child processes, core 0)

async function serveParley(): Promise<void> {
  const postgres = (await import('postgres')).default;
  const { loadSettings } = await import('../src/config.js');
  const { createLogger } = await import('../src/log.js');
  const { openStore } = await import('../src/store/db.js');
  const { migrate } = await import('../src/store/migrate.js');
  const { bootstrap } = await import('../src/store/workspaces.js');
  const { startWorkerPool } = await import('../src/workers/worker-pool.js');
  const name = `parley_bench_${randomBytes(4).toString('hex')}`;
  const admin = postgres(PG_ADMIN, { max: 1, onnotice: () => {} });
  await admin.unsafe(`create database ${name}`);
  const url = new URL(PG_ADMIN);
  url.pathname = `/${name}`;
  const apiKey = `pk_${randomBytes(32).toString('base64url')}`;
  // The run's recordings (500 conversations leave ~0.5 GB a minute) go with its database.
  const dataDir = join(tmpdir(), name);
  const settings = loadSettings({
    DATABASE_URL: url.toString(),
    PARLEY_LOG_LEVEL: 'error',
    PARLEY_DATA_DIR: dataDir,
    PARLEY_WS_PORT: '0',
    PARLEY_WORKERS: '1',
    PARLEY_RECONNECT_GRACE_SEC: '0',
    PARLEY_WORKSPACE_MAX_ACTIVE_CONVERSATIONS: '100000',
    PARLEY_BOOTSTRAP_API_KEY: apiKey,
  });
  const log = createLogger('error');
  const store = await openStore(settings, log);
  await migrate(store.sql, log);
  await bootstrap(store.sql, apiKey);
  const pool = await startWorkerPool({ settings, sql: store.sql, log });
  process.stdout.write(JSON.stringify({ port: pool.port, apiKey }) + '\n');
  process.stdin.resume();
  process.stdin.on('end', async () => {
    await pool.close(5_000);
    await store.close();
    await admin.unsafe(`drop database if exists ${name} with (force)`);
    await admin.end();
    rmSync(dataDir, { recursive: true, force: true });
    process.exit(0);
  });
}

async function serveFloor(): Promise<void> {
  const { App, us_listen_socket_close, us_socket_local_port } = (await import('uWebSockets.js')).default;
  let listen: unknown = null;
  App()
    .ws('/*', {
      maxBackpressure: 1024 * 1024,
      idleTimeout: 120,
      message: (ws, message, isBinary) => {
        ws.cork(() => ws.send(message, isBinary));
      },
    })
    .listen(HOST, 0, (s) => {
      listen = s;
      process.stdout.write(JSON.stringify({ port: us_socket_local_port(s as never), apiKey: 'none' }) + '\n');
    });
  process.stdin.resume();
  process.stdin.on('end', () => {
    us_listen_socket_close(listen as never);
    process.exit(0);
  });
}

// ---------------------------------------------------------------- the lean generator (this process, core 1)

/** A client-to-server WebSocket frame (RFC 6455 5.2), masked with an all-zero key (5.3: any key is valid). */
function clientFrame(opcode: number, payload: Buffer): Buffer {
  const len = payload.length;
  const head = len < 126 ? 2 : 4;
  const out = Buffer.alloc(head + 4 + len);
  out[0] = 0x80 | opcode;
  if (len < 126) out[1] = 0x80 | len;
  else {
    out[1] = 0x80 | 126;
    out.writeUInt16BE(len, 2);
  }
  payload.copy(out, head + 4);
  return out;
}

function wavFrames(path: string): Buffer[] {
  const wav = readFileSync(path);
  const at = wav.indexOf('data');
  const data = wav.subarray(at + 8, at + 8 + wav.readUInt32LE(at + 4));
  const frames: Buffer[] = [];
  for (let off = 0; off + FRAME_BYTES <= data.length; off += FRAME_BYTES)
    frames.push(clientFrame(0x2, data.subarray(off, off + FRAME_BYTES)));
  return frames;
}

const PROMPT_FRAMES = PROMPTS.map(wavFrames);
/** RMS above which a frame counts as voiced (the prompts' trailing silence is below ~100). */
const VOICED_RMS = 500;
/** Index of each prompt's last voiced frame: the end of the user's speech, which the VAD must find. */
const LAST_VOICED = PROMPT_FRAMES.map((frames) => {
  let last = 0;
  frames.forEach((f, i) => {
    const pcm = new Int16Array(f.buffer.slice(f.byteOffset + 8, f.byteOffset + f.length));
    let sum = 0;
    for (const v of pcm) sum += v * v;
    if (Math.sqrt(sum / pcm.length) > VOICED_RMS) last = i;
  });
  return last;
});
const SILENCE = clientFrame(0x2, Buffer.alloc(FRAME_BYTES));
const PONG = clientFrame(0xa, Buffer.alloc(0));

type Phase = 'connecting' | 'configuring' | 'speaking' | 'waiting';

class Conn {
  phase: Phase = 'connecting';
  sock: net.Socket;
  private buf: Buffer = Buffer.alloc(0);
  handshaken = false;
  /** The last event type received and the close code, if the server closed: why a client never got ready. */
  lastEvent = '';
  closeCode = 0;
  prompt = 0;
  frame = 0;
  barge = false;
  gapFrames = 0;
  lastVoicedAt = 0;
  finishedAt = 0;
  awaitingFirst = false;
  assistantFrames = 0;
  lastAudioAt = 0;
  speakingAssistant = false;
  closed = false;

  constructor(
    private readonly g: Generator,
    port: number,
    apiKey: string,
    readonly index: number,
  ) {
    this.prompt = index % PROMPT_FRAMES.length;
    this.sock = net.connect(port, HOST, () => {
      this.sock.setNoDelay(true);
      this.sock.write(
        `GET /v1/sts/ws HTTP/1.1\r\nHost: ${HOST}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n` +
          `Sec-WebSocket-Key: ${randomBytes(16).toString('base64')}\r\nSec-WebSocket-Version: 13\r\nAuthorization: Bearer ${apiKey}\r\n\r\n`,
      );
    });
    this.sock.on('data', (d) => this.data(d));
    this.sock.on('error', () => undefined);
    this.sock.on('close', () => {
      this.closed = true;
    });
  }

  private data(d: Buffer): void {
    this.buf = this.buf.length ? Buffer.concat([this.buf, d]) : d;
    if (!this.handshaken) {
      const end = this.buf.indexOf('\r\n\r\n');
      if (end < 0) return;
      if (!this.buf.subarray(0, 12).toString().includes('101')) {
        this.g.failed++;
        this.sock.destroy();
        return;
      }
      this.handshaken = true;
      this.buf = this.buf.subarray(end + 4);
      this.phase = this.g.floor ? 'speaking' : 'configuring';
      if (this.g.floor) this.g.ready++;
      this.sock.write(this.g.configFrame);
    }
    for (;;) {
      if (this.buf.length < 2) return;
      const op = this.buf[0] & 0x0f;
      let len = this.buf[1] & 0x7f;
      let off = 2;
      if (len === 126) {
        if (this.buf.length < 4) return;
        len = this.buf.readUInt16BE(2);
        off = 4;
      } else if (len === 127) {
        if (this.buf.length < 10) return;
        len = Number(this.buf.readBigUInt64BE(2));
        off = 10;
      }
      if (this.buf.length < off + len) return;
      const payload = this.buf.subarray(off, off + len);
      this.buf = this.buf.subarray(off + len);
      if (op === 0x8) this.closeCode = payload.length >= 2 ? payload.readUInt16BE(0) : 1005;
      if (op === 0x9) this.sock.write(PONG);
      else if (op === 0x2) this.audio();
      else if (op === 0x1) this.event(payload);
    }
  }

  private audio(): void {
    const now = performance.now();
    if (this.g.floor) return;
    if (this.awaitingFirst) {
      this.awaitingFirst = false;
      if (this.g.measuring) this.g.turnLatency.push(now - this.finishedAt);
    }
    if (this.speakingAssistant && this.lastAudioAt > 0 && this.g.measuring)
      this.g.jitter.push(Math.abs(now - this.lastAudioAt - FRAME_MS));
    this.lastAudioAt = now;
    this.assistantFrames++;
  }

  private event(payload: Buffer): void {
    if (payload.length > 200) return;
    const type = /"type":"([a-z_]+)"/.exec(payload.toString('latin1'))?.[1];
    this.lastEvent = type ?? '?';
    const now = performance.now();
    switch (type) {
      case 'ready_to_start_conversation':
        this.phase = 'waiting';
        this.gapFrames = 10 + (this.index % 50);
        this.g.ready++;
        return;
      case 'user_finished_speaking':
        this.finishedAt = now;
        this.awaitingFirst = true;
        if (this.g.measuring && this.lastVoicedAt > 0)
          this.g.vadDelay.push(now - this.lastVoicedAt - FRAME_MS - MIN_SILENCE_MS);
        this.lastVoicedAt = 0;
        return;
      case 'assistant_started_speaking':
        this.speakingAssistant = true;
        this.lastAudioAt = 0;
        this.assistantFrames = 0;
        return;
      case 'assistant_finished_speaking':
        this.speakingAssistant = false;
        if (this.phase === 'waiting' && this.gapFrames < 0) this.gapFrames = 10;
        return;
      case 'input_cancelled':
        if (this.g.measuring) this.g.cancelled++;
        return;
      case 'error':
        this.g.errors++;
        return;
    }
  }

  /** One 20 ms tick: every client sends one frame (speech or silence), as a real microphone does. */
  tick(): void {
    if (this.closed || (this.phase !== 'speaking' && this.phase !== 'waiting')) return;
    if (this.g.floor) {
      this.sock.write(PROMPT_FRAMES[this.prompt][this.frame++ % PROMPT_FRAMES[this.prompt].length]);
      return;
    }
    if (this.phase === 'speaking') {
      const frames = PROMPT_FRAMES[this.prompt];
      if (this.frame === LAST_VOICED[this.prompt]) this.lastVoicedAt = performance.now();
      this.sock.write(frames[this.frame++]);
      if (this.frame >= frames.length) {
        this.phase = 'waiting';
        this.barge = Math.random() < BARGE_SHARE;
        this.gapFrames = -1;
        if (this.g.measuring) this.g.turns++;
      }
      return;
    }
    this.sock.write(SILENCE);
    // Barge-in: speak again once the assistant has played ~0.5 s of its answer.
    if (this.barge && this.speakingAssistant && this.assistantFrames >= 25) {
      this.barge = false;
      if (this.g.measuring) this.g.barges++;
      return this.startSpeaking();
    }
    if (this.gapFrames > 0 && --this.gapFrames === 0) this.startSpeaking();
  }

  private startSpeaking(): void {
    this.phase = 'speaking';
    this.prompt = (this.prompt + 1) % PROMPT_FRAMES.length;
    this.frame = 0;
  }
}

class Generator {
  conns: Conn[] = [];
  measuring = false;
  ready = 0;
  failed = 0;
  errors = 0;
  turns = 0;
  barges = 0;
  cancelled = 0;
  turnLatency: number[] = [];
  vadDelay: number[] = [];
  jitter: number[] = [];
  lateness: number[] = [];
  readonly configFrame: Buffer;
  private timer: NodeJS.Timeout | null = null;

  constructor(readonly floor: boolean) {
    const config = {
      type: 'config',
      input_format: 'pcm_8000',
      output_format: 'pcm_8000',
      binary_audio: true,
      vad_min_silence_duration_ms: MIN_SILENCE_MS,
      ...CONFIG_EXTRA,
    };
    this.configFrame = clientFrame(0x1, Buffer.from(JSON.stringify(config)));
  }

  /** One deadline scheduler for every client (no timer per client, no drift). */
  start(): void {
    const t0 = performance.now();
    let n = 0;
    const run = () => {
      const now = performance.now();
      const due = t0 + n * FRAME_MS;
      if (this.measuring) this.lateness.push(now - due);
      for (const c of this.conns) c.tick();
      n++;
      // Behind by more than a frame: skip ahead rather than burst (and count it as lateness above).
      while (t0 + n * FRAME_MS < performance.now() - FRAME_MS) n++;
      this.timer = setTimeout(run, Math.max(0, t0 + n * FRAME_MS - performance.now()));
    };
    run();
  }

  stop(): void {
    if (this.timer) clearTimeout(this.timer);
    for (const c of this.conns) c.sock.destroy();
  }
}

// ---------------------------------------------------------------- orchestration

function quantile(xs: number[], q: number): number | null {
  if (xs.length === 0) return null;
  const s = [...xs].sort((a, b) => a - b);
  return Math.round(s[Math.min(s.length - 1, Math.floor(q * s.length))] * 100) / 100;
}

function cpuTicks(pid: number): number {
  const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return Number(f[11]) + Number(f[12]); // utime + stime (proc(5), fields 14 and 15)
}

/** Nanoseconds the process's threads spent runnable but waiting for a CPU (schedstat field 2, summed). */
function runqueueWaitNs(pid: number): number {
  let sum = 0;
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      sum += Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ')[1]);
    } catch {
      // the thread ended meanwhile: its wait is no longer counted (small against the window)
    }
  }
  return sum;
}

function rssKb(pid: number): number {
  return Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]);
}

/**
 * V8's --trace-gc lines of the Parley server (both isolates: main is idle in the window, the worker does the
 * work): `[pid:isolate] t ms: Scavenge 40.1 (52.3) -> 38.0 (52.3) MB, 1.23 / 0.00 ms ...`. The first figure after
 * the sizes is the pause on the isolate's thread; a Mark-Compact line also gives the wall time since marking began
 * (the stretch in which the marking threads share core 0 with the worker).
 */
const GC_LINE =
  /^\[\d+:(0x[0-9a-f]+)\].*: (Scavenge|Mark-Compact|Minor Mark-Compact)[^,]*, ([\d.]+) \/ [\d.]+ ms(?:.*walltime since start of marking (\d+) ms)?/;

interface GcTally {
  scavenges: number;
  mark_compacts: number;
  pause_total_ms: number;
  pause_max_ms: number;
  /** Longest marking cycle, start to finish (wall): concurrent marking competes with the worker on its core. */
  marking_wall_max_ms: number;
}

function newGcTally(): GcTally {
  return { scavenges: 0, mark_compacts: 0, pause_total_ms: 0, pause_max_ms: 0, marking_wall_max_ms: 0 };
}

/** GC lines tallied per isolate (the media worker, main, tsx's loader threads). */
type GcByIsolate = Map<string, GcTally>;

function countGcLine(byIsolate: GcByIsolate, line: string): void {
  const m = GC_LINE.exec(line);
  if (!m) return;
  let tally = byIsolate.get(m[1]);
  if (!tally) byIsolate.set(m[1], (tally = newGcTally()));
  const pause = Number(m[3]);
  if (m[2] === 'Mark-Compact') tally.mark_compacts++;
  else tally.scavenges++;
  tally.pause_total_ms += pause;
  tally.pause_max_ms = Math.max(tally.pause_max_ms, pause);
  if (m[4] !== undefined) tally.marking_wall_max_ms = Math.max(tally.marking_wall_max_ms, Number(m[4]));
}

/**
 * The media worker's GC in the window: the isolate that collected most often (it does all the work; main and the
 * loader threads are idle then, their few collections are reported apart), per minute and in all.
 */
function workerGc(byIsolate: GcByIsolate, windowSec: number): Record<string, number> {
  const all = [...byIsolate.values()].sort((a, b) => b.scavenges + b.mark_compacts - (a.scavenges + a.mark_compacts));
  const w = all[0] ?? newGcTally();
  const others = all.slice(1);
  return {
    ...w,
    pause_total_ms: Math.round(w.pause_total_ms * 10) / 10,
    mark_compacts_per_min: Math.round((w.mark_compacts / windowSec) * 60 * 10) / 10,
    other_isolates_collections: others.reduce((n, t) => n + t.scavenges + t.mark_compacts, 0),
    other_isolates_pause_total_ms: Math.round(others.reduce((n, t) => n + t.pause_total_ms, 0) * 10) / 10,
  };
}

interface Server {
  child: ChildProcess;
  port: number;
  apiKey: string;
  /** GC of the Parley server while `gc` is set (null for the floor, which runs without --trace-gc). */
  gc: GcByIsolate | null;
}

async function startServer(mode: 'parley' | 'floor'): Promise<Server> {
  const extra = mode === 'parley' ? ['--trace-gc', ...PARLEY_NODE_ARGS] : [];
  const child = spawn(
    'taskset',
    ['-c', '0', process.execPath, ...extra, ...process.execArgv, SELF, `--serve-${mode}`],
    { stdio: ['pipe', 'pipe', 'inherit'] },
  );
  const server: Server = { child, port: 0, apiKey: '', gc: null };
  // Line by line: the port line (the first that starts with {"port"), --trace-gc lines (tallied while measuring),
  // and the rest (errors: PARLEY_LOG_LEVEL=error) to our stderr.
  let acc = '';
  let announced: ((line: string) => void) | null = null;
  const onLine = (line: string) => {
    if (announced && line.startsWith('{"port"')) return announced(line);
    if (GC_LINE.test(line)) {
      if (server.gc) countGcLine(server.gc, line);
      if (GC_LOG) process.stderr.write(line + '\n');
      return;
    }
    process.stderr.write(line + '\n');
  };
  child.stdout!.on('data', (d: Buffer) => {
    acc += d.toString();
    for (let nl = acc.indexOf('\n'); nl >= 0; nl = acc.indexOf('\n')) {
      onLine(acc.slice(0, nl));
      acc = acc.slice(nl + 1);
    }
  });
  const line = await new Promise<string>((resolve, reject) => {
    announced = resolve;
    child.once('exit', (code) => reject(new Error(`${mode} server exited (${code})`)));
  });
  announced = null;
  const { port, apiKey } = JSON.parse(line) as { port: number; apiKey: string };
  server.port = port;
  server.apiKey = apiKey;
  return server;
}

async function stopServer(child: ChildProcess): Promise<void> {
  const exited = new Promise((r) => child.once('exit', r));
  child.stdin!.end();
  // Long enough for Parley to end and save every conversation (recordings gzipped), so --cpu-prof gets written.
  await Promise.race([exited, new Promise((r) => setTimeout(r, 90_000))]);
  child.kill('SIGKILL');
}

async function runOne(mode: 'parley' | 'floor', n: number): Promise<Record<string, unknown>> {
  const server = await startServer(mode);
  const { child, port, apiKey } = server;
  const pid = child.pid!; // taskset execs node in place: same pid
  await new Promise((r) => setTimeout(r, 1000));
  const rssBase = rssKb(pid);
  const g = new Generator(mode === 'floor');
  g.start();
  // Ramp: connect in batches so the upgrades (each authenticated through main) do not all land at once.
  for (let i = 0; i < n; i++) {
    const c = new Conn(g, port, apiKey, i);
    g.conns.push(c);
    if (i % 50 === 49) await new Promise((r) => setTimeout(r, 200));
  }
  // Parley: ready_to_start_conversation; the floor: the handshake completed.
  const deadline = Date.now() + 120_000;
  while (g.ready + g.failed + g.errors < n && Date.now() < deadline) await new Promise((r) => setTimeout(r, 200));
  await new Promise((r) => setTimeout(r, 3000)); // warm-up: turns under way
  const t0 = performance.now();
  const c0 = cpuTicks(pid);
  const w0 = runqueueWaitNs(pid);
  g.measuring = true;
  const gc = mode === 'parley' ? (server.gc = new Map()) : null;
  await new Promise((r) => setTimeout(r, WINDOW_SEC * 1000));
  g.measuring = false;
  server.gc = null;
  const windowSec = (performance.now() - t0) / 1000;
  const cpu = ((cpuTicks(pid) - c0) / CLK_TCK / windowSec) * 100;
  const waitPct = ((runqueueWaitNs(pid) - w0) / 1e9 / windowSec) * 100;
  const rss = rssKb(pid);
  // Clients that never got ready, by what they saw: handshake done or not, the last event, the close code.
  const notReady: Record<string, number> = {};
  for (const c of g.conns) {
    if (mode === 'floor' || (c.phase !== 'connecting' && c.phase !== 'configuring')) continue;
    const key = `${c.handshaken ? 'upgraded' : 'no_upgrade'}/${c.lastEvent || 'no_event'}/${c.closed ? `closed_${c.closeCode}` : 'open'}`;
    notReady[key] = (notReady[key] ?? 0) + 1;
  }
  g.stop();
  await stopServer(child);
  const lateP99 = quantile(g.lateness, 0.99);
  const result = {
    mode,
    n,
    ready: g.ready,
    failed: g.failed,
    errors: g.errors,
    not_ready: notReady,
    server_cpu_pct_of_core: Math.round(cpu * 10) / 10,
    // Time the server's threads were runnable but not running (other work on core 0): high means starved.
    server_runqueue_wait_pct: Math.round(waitPct * 10) / 10,
    load_average_1m: Math.round(os.loadavg()[0] * 100) / 100,
    rss_mb: Math.round(rss / 1024),
    rss_per_conversation_kb: Math.round((rss - rssBase) / n),
    turns: g.turns,
    barge_ins: g.barges,
    input_cancelled: g.cancelled,
    turn_latency_ms: {
      p50: quantile(g.turnLatency, 0.5),
      p99: quantile(g.turnLatency, 0.99),
      samples: g.turnLatency.length,
    },
    end_of_turn_after_last_voiced_plus_silence_ms: { p50: quantile(g.vadDelay, 0.5), p99: quantile(g.vadDelay, 0.99) },
    outbound_jitter_ms: { p50: quantile(g.jitter, 0.5), p99: quantile(g.jitter, 0.99), samples: g.jitter.length },
    generator_lateness_ms: { p50: quantile(g.lateness, 0.5), p99: lateP99, max: quantile(g.lateness, 1) },
    generator_bound: lateP99 !== null && lateP99 > FRAME_MS / 2,
    contention_bound: waitPct > CONTENTION_WAIT_PCT,
    worker_gc: gc && workerGc(gc, windowSec),
  };
  console.log(JSON.stringify(result));
  return result;
}

async function main(): Promise<void> {
  execFileSync('taskset', ['-cp', '1', String(process.pid)], { stdio: 'ignore' });
  const runs: Record<string, unknown>[] = [];
  for (const n of NS) for (const mode of MODES) runs.push(await runOne(mode, n));
  if (!WRITE_RESULTS) return;
  mkdirSync(new URL('./results/', import.meta.url), { recursive: true });
  writeFileSync(
    new URL('./results/sts.json', import.meta.url),
    JSON.stringify(
      {
        bench: 'sts',
        date: new Date().toISOString(),
        setup: {
          server: 'one media worker, process pinned to core 0 (taskset -c 0)',
          generator: 'raw-socket WebSocket client, one deadline scheduler, pinned to core 1',
          audio: 'pcm_8000 binary frames both ways, 20 ms, Allison prompts, echo engine',
          window_sec: WINDOW_SEC,
          load_average_1m_at_end: Math.round(os.loadavg()[0] * 100) / 100,
          barge_share: BARGE_SHARE,
          cpus: 2,
        },
        runs,
      },
      null,
      2,
    ) + '\n',
  );
}

const arg = process.argv[2];
if (arg === '--serve-parley') await serveParley();
else if (arg === '--serve-floor') await serveFloor();
else await main();
