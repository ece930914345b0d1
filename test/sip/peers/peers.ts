// Starting and driving the real SIP peers of the tests: SIPp, baresip (with its ctrl_tcp socket) and
// Kamailio. Every peer is started here, bounded in time, and stopped by its PID.

import { spawn, type ChildProcess } from 'node:child_process';
import { EventEmitter } from 'node:events';
import { mkdtempSync, readFileSync, writeFileSync, existsSync, mkdirSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export const PEERS_DIR = '/work/shared/peers';
const SPEECH = '/usr/share/asterisk/sounds/en_US_f_Allison/hello-world.wav';

export function tempDir(prefix: string): string {
  return mkdtempSync(join(tmpdir(), `parley-${prefix}-`));
}

export interface SippResult {
  code: number | null;
  stats: Record<string, string>;
  stdout: string;
  stderr: string;
  errors: string;
}

/**
 * Run SIPp in the foreground until it exits (or `timeoutMs`, then it is killed); read its final
 * statistics from the -trace_stat CSV (the cumulative "(C)" columns).
 */
export async function runSipp(args: string[], opts: { cwd?: string; timeoutMs: number }): Promise<SippResult> {
  const cwd = opts.cwd ?? tempDir('sipp');
  const statFile = join(cwd, `stat-${process.pid}-${Date.now()}.csv`);
  const errFile = join(cwd, `err-${process.pid}-${Date.now()}.log`);
  const full = [...args, '-nostdin', '-trace_stat', '-stf', statFile, '-fd', '1', '-trace_err', '-error_file', errFile];
  const child = spawn('sipp', full, { cwd, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => { stdout += d.toString(); });
  child.stderr.on('data', (d: Buffer) => { stderr += d.toString(); });
  const code = await new Promise<number | null>((resolve, reject) => {
    const timer = setTimeout(() => { child.kill('SIGKILL'); }, opts.timeoutMs);
    child.on('error', reject);
    child.on('exit', (c) => { clearTimeout(timer); resolve(c); });
  });
  const stats: Record<string, string> = {};
  if (existsSync(statFile)) {
    const lines = readFileSync(statFile, 'utf8').trim().split('\n');
    const names = lines[0].split(';');
    const last = lines[lines.length - 1].split(';');
    names.forEach((n, i) => { stats[n] = last[i]; });
  }
  const errors = existsSync(errFile) ? readFileSync(errFile, 'utf8') : '';
  return { code, stats, stdout, stderr, errors };
}

/** A long-running process started by a test, stopped by its PID. */
export class Peer {
  readonly output: string[] = [];
  readonly exited: Promise<number | null>;

  constructor(readonly name: string, readonly child: ChildProcess) {
    child.stdout?.on('data', (d: Buffer) => this.output.push(d.toString()));
    child.stderr?.on('data', (d: Buffer) => this.output.push(d.toString()));
    this.exited = new Promise((resolve) => child.on('exit', (c) => resolve(c)));
  }

  get log(): string {
    return this.output.join('');
  }

  async stop(): Promise<void> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return;
    this.child.kill('SIGTERM');
    const killer = setTimeout(() => this.child.kill('SIGKILL'), 3000);
    await this.exited;
    clearTimeout(killer);
  }

  /** The exit code, or 'timeout' when it is still running after `ms` (the timer does not outlive the wait). */
  async exitedWithin(ms: number): Promise<number | null | 'timeout'> {
    let timer: NodeJS.Timeout | undefined;
    const limit = new Promise<'timeout'>((r) => { timer = setTimeout(() => r('timeout'), ms); });
    try {
      return await Promise.race([this.exited, limit]);
    } finally {
      clearTimeout(timer);
    }
  }

  /** Wait until the output matches, or fail loudly with the output so far. */
  async waitFor(pattern: RegExp, timeoutMs: number): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!pattern.test(this.log)) {
      if (this.child.exitCode !== null) throw new Error(`${this.name} exited (${this.child.exitCode}) before ${pattern}:\n${this.log}`);
      if (Date.now() > deadline) throw new Error(`${this.name}: no ${pattern} within ${timeoutMs} ms:\n${this.log}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }
}

/** SIPp as a background callee (`-sn uas` or a scenario file) for `calls` calls. */
export function startSipp(args: string[], cwd: string): Peer {
  return new Peer('sipp', spawn('sipp', [...args, '-nostdin'], { cwd, stdio: ['ignore', 'pipe', 'pipe'] }));
}

/** An 8 kHz mono 16-bit WAV of real speech padded with silence, for baresip's aufile source. */
export function speechWav(dir: string, padSec = 20): string {
  const out = join(dir, 'speech.wav');
  if (!existsSync(out)) {
    const r = spawnSyncChecked('sox', [SPEECH, '-r', '8000', '-c', '1', '-b', '16', '-e', 'signed-integer', out, 'pad', '0', `${padSec}`]);
    if (r !== 0) throw new Error('sox failed to make the speech WAV');
  }
  return out;
}

import { spawnSync } from 'node:child_process';
function spawnSyncChecked(cmd: string, args: string[]): number | null {
  return spawnSync(cmd, args, { stdio: 'ignore' }).status;
}

export interface BaresipOptions {
  sipPort: number;
  ctrlPort: number;
  rtpPorts: string;
  /** The account's user part (default "ua"). */
  user?: string;
}

/** baresip from the shared templates, auto-answering, with its ctrl_tcp socket connected. */
export async function startBaresip(opts: BaresipOptions): Promise<{ peer: Peer; ctl: BaresipCtl; dir: string }> {
  const dir = tempDir('baresip');
  const rec = join(dir, 'rec');
  mkdirSync(rec);
  const fill = (text: string) => text
    .replaceAll('@SIP_PORT@', `${opts.sipPort}`).replaceAll('@CTRL_PORT@', `${opts.ctrlPort}`)
    .replaceAll('@RTP_PORTS@', opts.rtpPorts).replaceAll('@AUDIO_IN@', speechWav(dir)).replaceAll('@REC_DIR@', rec);
  writeFileSync(join(dir, 'config'), fill(readFileSync(join(PEERS_DIR, 'baresip/config.template'), 'utf8')));
  let accounts = fill(readFileSync(join(PEERS_DIR, 'baresip/accounts.template'), 'utf8'));
  if (opts.user) accounts = accounts.replace('<sip:ua@', `<sip:${opts.user}@`);
  writeFileSync(join(dir, 'accounts'), accounts);
  const peer = new Peer('baresip', spawn('baresip', ['-f', dir], { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] }));
  const ctl = await BaresipCtl.connect(opts.ctrlPort, 5000, peer);
  return { peer, ctl, dir };
}

export interface BaresipEvent {
  event: true;
  type: string;
  class?: string;
  param?: string;
  peeruri?: string;
  [key: string]: unknown;
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

  static async connect(port: number, timeoutMs: number, peer: Peer): Promise<BaresipCtl> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      try {
        const socket = await new Promise<Socket>((resolve, reject) => {
          const s = connect(port, '127.0.0.1', () => resolve(s));
          s.once('error', reject);
        });
        return new BaresipCtl(socket);
      } catch (err) {
        if (peer.child.exitCode !== null) throw new Error(`baresip exited before its ctrl socket opened:\n${peer.log}`);
        if (Date.now() > deadline) throw new Error(`baresip ctrl port ${port} did not open: ${(err as Error).message}\n${peer.log}`);
        await new Promise((r) => setTimeout(r, 100));
      }
    }
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
        reject(new Error(`baresip: no ${type} within ${timeoutMs} ms; events: ${this.events.map((e) => e.type).join(', ')}`));
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

/** Kamailio as a dispatcher in front of `nodes`, from the shared config with our ports. */
export async function startKamailio(listenPort: number, nodes: string[]): Promise<Peer> {
  const dir = tempDir('kamailio');
  mkdirSync(join(dir, 'run'));
  const cfg = readFileSync(join(PEERS_DIR, 'kamailio/kamailio.cfg'), 'utf8')
    .replaceAll('@DIR@', dir)
    .replace(/127\.0\.0\.1:15070/g, `127.0.0.1:${listenPort}`)
    // One UDP worker: with two, the 100 Trying one child sends and the 200 OK another relays can reach SIPp in
    // reverse order, and SIPp's built-in uac aborts the call on the late 100 (seen on a quiet machine).
    .replace(/^children=\d+$/m, 'children=1');
  writeFileSync(join(dir, 'kamailio.cfg'), cfg);
  writeFileSync(join(dir, 'dispatcher.list'), nodes.map((n) => `1 ${n}`).join('\n') + '\n');
  const peer = new Peer('kamailio', spawn('kamailio', ['-DD', '-E', '-f', join(dir, 'kamailio.cfg'), '-P', join(dir, 'kam.pid'), '-Y', join(dir, 'run'), '-m', '64', '-M', '8'], { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] }));
  await peer.waitFor(/SO_RCVBUF is finally/, 5000);
  return peer;
}
