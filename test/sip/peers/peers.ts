// Starting and driving the real SIP peers of the tests: SIPp, baresip (with its ctrl_tcp socket) and
// Kamailio, configured from test/fixtures (docs/peers.md). Every peer is started here, bounded in time, and
// stopped by its PID.

import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { EventEmitter } from 'node:events';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { BARESIP_MODULES_DIR, SIPP_CAPTURES_DIR, soundFile } from '../../helpers/debian-packages.js';
import { until } from '../../helpers/wait.js';

/** The peers' configuration files and scenarios (test/fixtures/{baresip,kamailio,sipp}). */
export const FIXTURES_DIR = fileURLToPath(new URL('../../fixtures/', import.meta.url));
/** The real speech baresip and SIPp send: 1.4 s of one speaker. */
const SPEECH_PROMPT = 'hello-world';
/** SIGTERM first; a peer still running this long after it is killed. */
const STOP_GRACE_MS = 3000;
const START_TIMEOUT_MS = 5000;

export function tempDir(prefix: string): string {
  return mkdtempSync(join(tmpdir(), `parley-${prefix}-`));
}

/** A fixture with its @NAME@ fields filled; a field left unfilled is an error, not a broken peer. */
export function fillTemplate(fixture: string, fields: Record<string, string>): string {
  return readFileSync(join(FIXTURES_DIR, fixture), 'utf8').replace(/@([A-Z_]+)@/g, (whole, name: string) => {
    if (!(name in fields)) throw new Error(`${fixture}: no value for ${whole}`);
    return fields[name];
  });
}

/** Whether something on 127.0.0.1 listens on `port` (Linux: the kernel's socket tables in /proc/net). */
export function listening(port: number, transport: 'udp' | 'tcp'): boolean {
  const LOCALHOST_HEX = '0100007F'; // 127.0.0.1 as /proc/net prints it (little-endian)
  const TCP_LISTEN = '0A';
  const rows = readFileSync(`/proc/net/${transport}`, 'utf8').trim().split('\n').slice(1);
  const want = port.toString(16).toUpperCase().padStart(4, '0');
  return rows.some((row) => {
    const [, local, , state] = row.trim().split(/\s+/);
    const [host, hexPort] = local.split(':');
    return (
      hexPort === want &&
      (host === LOCALHOST_HEX || host === '00000000') &&
      (transport === 'udp' || state === TCP_LISTEN)
    );
  });
}

/** SIPp's final statistics from its -trace_stat CSV: the last line, by column name (e.g. "SuccessfulCall(C)"). */
export function readSippStats(statFile: string): Record<string, string> {
  const stats: Record<string, string> = {};
  if (!existsSync(statFile)) return stats;
  const lines = readFileSync(statFile, 'utf8').trim().split('\n');
  const names = lines[0].split(';');
  const last = lines[lines.length - 1].split(';');
  names.forEach((n, i) => {
    stats[n] = last[i];
  });
  return stats;
}

export interface SippResult {
  code: number | null;
  stats: Record<string, string>;
  stdout: string;
  stderr: string;
  errors: string;
}

/** The arguments that make SIPp write its statistics and errors to `dir`. */
function sippTraceArgs(dir: string): { args: string[]; statFile: string; errFile: string } {
  const stamp = `${process.pid}-${Date.now()}`;
  const statFile = join(dir, `stat-${stamp}.csv`);
  const errFile = join(dir, `err-${stamp}.log`);
  return {
    args: ['-nostdin', '-trace_stat', '-stf', statFile, '-fd', '1', '-trace_err', '-error_file', errFile],
    statFile,
    errFile,
  };
}

/**
 * Run SIPp in the foreground until it exits (or `timeoutMs`, then it is killed); its final statistics are read
 * from the -trace_stat CSV (the cumulative "(C)" columns).
 */
export async function runSipp(args: string[], opts: { cwd?: string; timeoutMs: number }): Promise<SippResult> {
  const cwd = opts.cwd ?? tempDir('sipp');
  const trace = sippTraceArgs(cwd);
  const child = spawn('sipp', [...args, ...trace.args], { cwd, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => {
    stdout += d.toString();
  });
  child.stderr.on('data', (d: Buffer) => {
    stderr += d.toString();
  });
  const code = await new Promise<number | null>((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
    }, opts.timeoutMs);
    child.on('error', reject);
    child.on('exit', (c) => {
      clearTimeout(timer);
      resolve(c);
    });
  });
  const errors = existsSync(trace.errFile) ? readFileSync(trace.errFile, 'utf8') : '';
  return { code, stats: readSippStats(trace.statFile), stdout, stderr, errors };
}

/** A long-running process started by a test, stopped by its PID. */
export class Peer {
  readonly output: string[] = [];
  readonly exited: Promise<number | null>;

  constructor(
    readonly name: string,
    readonly child: ChildProcess,
  ) {
    child.stdout?.on('data', (d: Buffer) => this.output.push(d.toString()));
    child.stderr?.on('data', (d: Buffer) => this.output.push(d.toString()));
    this.exited = new Promise((resolve) => child.on('exit', (c) => resolve(c)));
  }

  get log(): string {
    return this.output.join('');
  }

  get running(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null;
  }

  async stop(): Promise<void> {
    if (!this.running) return;
    this.child.kill('SIGTERM');
    const killer = setTimeout(() => this.child.kill('SIGKILL'), STOP_GRACE_MS);
    await this.exited;
    clearTimeout(killer);
  }

  /** The exit code, or 'timeout' when it is still running after `ms` (the timer does not outlive the wait). */
  async exitedWithin(ms: number): Promise<number | null | 'timeout'> {
    let timer: NodeJS.Timeout | undefined;
    const limit = new Promise<'timeout'>((r) => {
      timer = setTimeout(() => r('timeout'), ms);
    });
    try {
      return await Promise.race([this.exited, limit]);
    } finally {
      clearTimeout(timer);
    }
  }

  /** Wait until `ready` holds; fails at once, with the output so far, when the peer exits first. */
  async waitUntil(ready: () => boolean, timeoutMs: number, what: string): Promise<void> {
    await until(
      () => {
        if (ready()) return true;
        if (!this.running)
          throw new Error(
            `${this.name} exited (${this.child.exitCode ?? this.child.signalCode}) before ${what}:\n${this.log}`,
          );
        return false;
      },
      { timeoutMs, intervalMs: 50, what: () => `${this.name}: ${what}\n${this.log}` },
    );
  }
}

/** SIPp in the background, its statistics and errors traced to its working folder. */
export class SippPeer extends Peer {
  constructor(
    child: ChildProcess,
    readonly statFile: string,
    readonly errFile: string,
  ) {
    super('sipp', child);
  }

  /** Its statistics as last written (final once it has exited). */
  stats(): Record<string, string> {
    return readSippStats(this.statFile);
  }

  get errors(): string {
    return existsSync(this.errFile) ? readFileSync(this.errFile, 'utf8') : '';
  }
}

/**
 * SIPp as a background callee (`-sn uas` or a scenario file); resolves once it listens on the port of its `-p`
 * argument (TCP with `-t t1`, else UDP).
 */
export async function startSipp(args: string[], cwd: string): Promise<SippPeer> {
  const flag = (name: string) => (args.includes(name) ? args[args.indexOf(name) + 1] : undefined);
  const port = Number(flag('-p'));
  if (!Number.isInteger(port)) throw new Error('startSipp: give the listening port as -p PORT');
  const transport = flag('-t') === 't1' ? 'tcp' : 'udp';
  const trace = sippTraceArgs(cwd);
  const sipp = new SippPeer(
    spawn('sipp', [...args, ...trace.args], { cwd, stdio: ['ignore', 'pipe', 'pipe'] }),
    trace.statFile,
    trace.errFile,
  );
  try {
    await sipp.waitUntil(() => listening(port, transport), START_TIMEOUT_MS, `listening on ${transport} port ${port}`);
  } catch (err) {
    await sipp.stop();
    throw err;
  }
  return sipp;
}

function runChecked(cmd: string, args: string[]): void {
  const r = spawnSync(cmd, args, { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')} failed (${r.error?.message ?? r.status}): ${r.stderr}`);
}

/** An 8 kHz mono 16-bit WAV of real speech padded with silence, for baresip's aufile source. */
export function speechWav(dir: string, padSec = 20): string {
  const out = join(dir, 'speech.wav');
  if (!existsSync(out))
    runChecked('sox', [
      soundFile(SPEECH_PROMPT),
      '-r',
      '8000',
      '-c',
      '1',
      '-b',
      '16',
      '-e',
      'signed-integer',
      out,
      'pad',
      '0',
      `${padSec}`,
    ]);
  return out;
}

/**
 * A working folder for SIPp's media scenarios: `speech.al` (raw A-law speech for rtp_stream) and a link `pcap`
 * to SIPp's captures (play_pcap_audio="pcap/dtmf_2833_5.pcap").
 */
export function sippMediaDir(): string {
  const dir = tempDir('sipp-media');
  runChecked('sox', [soundFile(SPEECH_PROMPT), '-r', '8000', '-c', '1', '-t', 'al', join(dir, 'speech.al')]);
  symlinkSync(SIPP_CAPTURES_DIR, join(dir, 'pcap'));
  return dir;
}

export interface BaresipOptions {
  sipPort: number;
  ctrlPort: number;
  /** RTP port range, "first-last". */
  rtpPorts: string;
  /** The account's user part (default "ua"). */
  user?: string;
  /** The WAV it sends (8 kHz mono 16-bit); speechWav's by default. */
  audioIn?: string;
}

/** baresip from test/fixtures/baresip, auto-answering, with its ctrl_tcp socket connected. */
export async function startBaresip(opts: BaresipOptions): Promise<{ peer: Peer; ctl: BaresipCtl; dir: string }> {
  const dir = tempDir('baresip');
  const rec = join(dir, 'rec');
  mkdirSync(rec);
  const fields = {
    SIP_PORT: `${opts.sipPort}`,
    CTRL_PORT: `${opts.ctrlPort}`,
    RTP_PORTS: opts.rtpPorts,
    AUDIO_IN: opts.audioIn ?? speechWav(dir),
    REC_DIR: rec,
    USER: opts.user ?? 'ua',
    MODULE_PATH: BARESIP_MODULES_DIR,
  };
  writeFileSync(join(dir, 'config'), fillTemplate('baresip/config.template', fields));
  writeFileSync(join(dir, 'accounts'), fillTemplate('baresip/accounts.template', fields));
  const peer = new Peer('baresip', spawn('baresip', ['-f', dir], { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] }));
  try {
    const ctl = await BaresipCtl.connect(opts.ctrlPort, START_TIMEOUT_MS, peer);
    return { peer, ctl, dir };
  } catch (err) {
    await peer.stop();
    throw err;
  }
}

export interface BaresipEvent {
  event: true;
  type: string;
  class?: string;
  param?: string;
  peeruri?: string;
  [key: string]: unknown;
}

function connectOnce(port: number): Promise<Socket> {
  return new Promise<Socket>((resolve, reject) => {
    const s = connect(port, '127.0.0.1', () => resolve(s));
    s.once('error', reject);
  });
}

/** baresip's ctrl_tcp: netstring-framed JSON commands, responses and events. */
export class BaresipCtl extends EventEmitter<{ event: [BaresipEvent]; response: [Record<string, unknown>] }> {
  readonly events: BaresipEvent[] = [];
  #buf = Buffer.alloc(0);
  #token = 0;

  private constructor(private readonly socket: Socket) {
    super();
    socket.on('data', (d: Buffer) => this.#onData(d));
  }

  /** Connects once baresip's ctrl socket accepts (retried while it starts); fails when baresip exits first. */
  static async connect(port: number, timeoutMs: number, peer: Peer): Promise<BaresipCtl> {
    let socket: Socket | null = null;
    let lastError = '';
    await until(
      async () => {
        if (!peer.running) throw new Error(`baresip exited before its ctrl socket opened:\n${peer.log}`);
        try {
          socket = await connectOnce(port);
          return true;
        } catch (err) {
          lastError = (err as Error).message;
          return false;
        }
      },
      { timeoutMs, intervalMs: 100, what: () => `baresip's ctrl port ${port} (${lastError})\n${peer.log}` },
    );
    return new BaresipCtl(socket!);
  }

  #onData(d: Buffer): void {
    this.#buf = Buffer.concat([this.#buf, d]);
    for (;;) {
      const colon = this.#buf.indexOf(0x3a);
      if (colon < 0) return;
      const len = Number(this.#buf.subarray(0, colon).toString());
      if (this.#buf.length < colon + 1 + len + 1) return;
      const json = JSON.parse(this.#buf.subarray(colon + 1, colon + 1 + len).toString()) as Record<string, unknown>;
      this.#buf = this.#buf.subarray(colon + 1 + len + 1);
      if (json.event) {
        this.events.push(json as BaresipEvent);
        this.emit('event', json as BaresipEvent);
      } else this.emit('response', json);
    }
  }

  /** Send one command ("dial", "hangup", "sndcode", "transfer"...) and wait for its response. */
  async command(command: string, params = '', timeoutMs = 5000): Promise<Record<string, unknown>> {
    const token = `t${++this.#token}`;
    const msg = Buffer.from(JSON.stringify({ command, params, token }));
    const reply = new Promise<Record<string, unknown>>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`baresip: no response to ${command}`)), timeoutMs);
      const on = (r: Record<string, unknown>) => {
        if (r.token !== token) return;
        clearTimeout(timer);
        this.off('response', on);
        resolve(r);
      };
      this.on('response', on);
    });
    this.socket.write(Buffer.concat([Buffer.from(`${msg.length}:`), msg, Buffer.from(',')]));
    return reply;
  }

  /** Wait for an event of a type (e.g. CALL_ESTABLISHED) seen after `since` events. */
  async waitEvent(type: string, timeoutMs: number, since = 0): Promise<BaresipEvent> {
    const seen = this.events.slice(since).find((e) => e.type === type);
    if (seen) return seen;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.off('event', on);
        reject(
          new Error(`baresip: no ${type} within ${timeoutMs} ms; events: ${this.events.map((e) => e.type).join(', ')}`),
        );
      }, timeoutMs);
      const on = (e: BaresipEvent) => {
        if (e.type !== type) return;
        clearTimeout(timer);
        this.off('event', on);
        resolve(e);
      };
      this.on('event', on);
    });
  }

  close(): void {
    this.socket.destroy();
  }
}

/**
 * Kamailio from test/fixtures/kamailio as a dispatcher in front of `nodes` (SIP URIs), listening on UDP `listenPort`;
 * `config` names the fixture (kamailio.cfg: Call-ID hash, no probing; cluster.cfg: round robin, OPTIONS probing,
 * failover).
 */
export async function startKamailio(
  listenPort: number,
  nodes: string[],
  config = 'kamailio/kamailio.cfg',
): Promise<Peer> {
  const dir = tempDir('kamailio');
  mkdirSync(join(dir, 'run'));
  writeFileSync(join(dir, 'kamailio.cfg'), fillTemplate(config, { LISTEN_PORT: `${listenPort}`, DIR: dir }));
  writeFileSync(join(dir, 'dispatcher.list'), nodes.map((n) => `1 ${n}`).join('\n') + '\n');
  const args = [
    '-DD',
    '-E',
    '-f',
    join(dir, 'kamailio.cfg'),
    '-P',
    join(dir, 'kam.pid'),
    '-Y',
    join(dir, 'run'),
    '-m',
    '64',
    '-M',
    '8',
  ];
  const peer = new Peer('kamailio', spawn('kamailio', args, { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] }));
  try {
    await peer.waitUntil(() => listening(listenPort, 'udp'), START_TIMEOUT_MS, `listening on udp port ${listenPort}`);
  } catch (err) {
    await peer.stop();
    throw err;
  }
  return peer;
}
