// SIPp runs of the SIP service's tests: a scenario (a fixture of test/fixtures/sipp or a built-in one) against a
// node, in the foreground and bounded in time, with its message trace read back: the responses it received (their
// status lines and headers) and the requests. Each run binds its own free ports on loopback.
import { spawn } from 'node:child_process';
import { createSocket } from 'node:dgram';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { isAbsolute, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Test } from 'tap';

export const SIPP_FIXTURES = fileURLToPath(new URL('../fixtures/sipp/', import.meta.url));

export async function freeUdpPort(address = '127.0.0.1'): Promise<number> {
  const s = createSocket('udp4');
  await new Promise<void>((resolve) => s.bind(0, address, () => resolve()));
  const { port } = s.address();
  await new Promise<void>((resolve) => s.close(() => resolve()));
  return port;
}

/**
 * The ports SIPp's media takes from -mp on: its audio socket there (rtp_stream sends from it too), its video socket
 * at -mp + 2, and the RTCP ports beside them. One of them taken fails the run at start.
 */
const SIPP_MEDIA_PORTS = 4;

/** The first of `count` consecutive free UDP ports on `address` (each bound, then released). */
async function freeUdpPorts(count: number, address = '127.0.0.1'): Promise<number> {
  for (let attempt = 0; attempt < 20; attempt++) {
    const first = await freeUdpPort(address);
    const held: ReturnType<typeof createSocket>[] = [];
    let ok = true;
    for (let p = first; p < first + count && ok; p++) {
      const s = createSocket('udp4');
      ok = await new Promise<boolean>((resolve) => {
        s.once('error', () => resolve(false));
        s.bind(p, address, () => resolve(true));
      });
      held.push(s);
    }
    await Promise.all(
      held.map(
        (s) =>
          new Promise<void>((resolve) => {
            try {
              s.close(() => resolve());
            } catch {
              resolve(); // never bound
            }
          }),
      ),
    );
    if (ok) return first;
  }
  throw new Error(`no ${count} consecutive free UDP ports`);
}

export interface SippOptions {
  /** A fixture file name (`uac_refused.xml`), a scenario file's absolute path, or a built-in scenario (`-sn uac`: `{ builtin: 'uac' }`). */
  scenario: string | { builtin: string };
  /** Where to send (`127.0.0.1:5060`); absent for a callee (uas). */
  target?: string;
  /** [service]: the Request-URI and To user. */
  service?: string;
  /** -key name value: [name] in the scenario. */
  keys?: Record<string, string>;
  calls?: number;
  /** SIP over TCP (-t t1); UDP by default. */
  tcp?: boolean;
  /** Calls per second (-r). */
  rate?: number;
  /** How long a scenario's bare `<pause/>` lasts (-d), in ms. */
  pauseMs?: number;
  /** A port to listen on (a callee); a free one by default. */
  port?: number;
  timeoutMs?: number;
  /** Resolves once SIPp's process has started (a callee's port is bound soon after). */
  onStart?: () => void;
  /** Files written to SIPp's working folder first (an rtp_stream's audio), by name. */
  files?: Record<string, Uint8Array>;
  /** The address SIPp sends from (127.0.0.1 by default; 127.0.0.2 etc. are loopback too). */
  localIp?: string;
  /** The working folder (media files a scenario streams), kept; a fresh one, removed after the run, by default. */
  cwd?: string;
}

export interface SippRun {
  code: number | null;
  /** Every SIP message SIPp received, as text, in order. */
  received: string[];
  /** The status codes of the responses it received, in order. */
  statuses: number[];
  output: string;
}

const RECEIVED = /message received \[\d+\] bytes :\s*\n\n([\s\S]*?)(?=\n-{20,}|$)/g;

export async function runSipp(opts: SippOptions): Promise<SippRun> {
  const cwd = opts.cwd ?? mkdtempSync(join(tmpdir(), 'parley-sipp-run-'));
  for (const [name, bytes] of Object.entries(opts.files ?? {})) writeFileSync(join(cwd, name), bytes);
  const messages = join(cwd, 'messages.log');
  const port = opts.port ?? (await freeUdpPort(opts.localIp));
  const mediaPort = await freeUdpPorts(SIPP_MEDIA_PORTS, opts.localIp);
  const args = [
    ...(typeof opts.scenario === 'string'
      ? ['-sf', isAbsolute(opts.scenario) ? opts.scenario : join(SIPP_FIXTURES, opts.scenario)]
      : ['-sn', opts.scenario.builtin]),
    '-i',
    opts.localIp ?? '127.0.0.1',
    '-p',
    `${port}`,
    '-mp',
    `${mediaPort}`,
    '-m',
    `${opts.calls ?? 1}`,
    '-nostdin',
    '-trace_msg',
    '-message_file',
    messages,
    '-message_overwrite',
    'false',
    '-trace_err',
    '-error_file',
    join(cwd, 'errors.log'),
  ];
  if (opts.service) args.push('-s', opts.service);
  if (opts.tcp) args.push('-t', 't1');
  if (opts.rate) args.push('-r', `${opts.rate}`, '-rp', '1000');
  if (opts.pauseMs !== undefined) args.push('-d', `${opts.pauseMs}`);
  for (const [k, v] of Object.entries(opts.keys ?? {})) args.push('-key', k, v);
  if (opts.target) args.push(opts.target);
  const child = spawn('sipp', args, { cwd, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout.on('data', (d: Buffer) => {
    output += d.toString();
  });
  child.stderr.on('data', (d: Buffer) => {
    output += d.toString();
  });
  opts.onStart?.();
  const code = await new Promise<number | null>((resolve, reject) => {
    const timer = setTimeout(() => child.kill('SIGKILL'), opts.timeoutMs ?? 30_000);
    child.once('error', reject);
    child.once('exit', (c) => {
      clearTimeout(timer);
      resolve(c);
    });
  });
  const trace = existsSync(messages) ? readFileSync(messages, 'utf8').replace(/\r\n/g, '\n') : '';
  const received = [...trace.matchAll(RECEIVED)].map((m) => m[1] ?? '');
  const statuses = received.flatMap((m) => {
    const s = /^SIP\/2\.0 (\d{3}) /.exec(m);
    return s ? [Number(s[1])] : [];
  });
  const errors = join(cwd, 'errors.log');
  if (existsSync(errors)) output += `\n${readFileSync(errors, 'utf8')}`;
  if (opts.cwd === undefined) rmSync(cwd, { recursive: true, force: true });
  return { code, received, statuses, output };
}

/** A callee (uas scenario) started in the background on `port` (a free one by default): its run once it exits. */
export async function startSippCallee(
  opts: Omit<SippOptions, 'target' | 'onStart'>,
): Promise<{ port: number; done: Promise<SippRun> }> {
  const port = opts.port ?? (await freeUdpPort());
  let started!: () => void;
  const up = new Promise<void>((resolve) => (started = resolve));
  const done = runSipp({ ...opts, port, onStart: started });
  await up;
  // SIPp binds its port right after it starts; give it that moment before it is called.
  await new Promise((r) => setTimeout(r, 300));
  return { port, done };
}

/** The value of a header in a message's text (first occurrence), or undefined. */
export function headerOf(message: string, name: string): string | undefined {
  const re = new RegExp(`^${name}\\s*:\\s*(.*)$`, 'im');
  return re.exec(message)?.[1]?.trim();
}

/** Asserts a SIPp run completed its scenario (exit 0), showing its output when it did not. */
export function sippCompleted(t: Test, run: SippRun, what = 'SIPp completed its scenario'): void {
  t.equal(run.code, 0, what, { output: run.output.slice(-2000) });
}
