// Real SIP peers of the telephony tests, on loopback, bounded in time, stopped by their PID:
// the INVITEs SIPp (built-in uac scenarios) and baresip send, captured on a UDP socket of the test; and SIPp's
// built-in uas scenario as a callee.
import { spawn, type ChildProcess } from 'node:child_process';
import { createSocket } from 'node:dgram';
import { mkdirSync, mkdtempSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseMessage, type SipRequest } from '../../sip/message/index.js';

const CAPTURE_TIMEOUT_MS = 10_000;
const STOP_GRACE_MS = 2_000;

async function freeUdpPort(): Promise<number> {
  const s = createSocket('udp4');
  await new Promise<void>((resolve) => s.bind(0, '127.0.0.1', () => resolve()));
  const { port } = s.address();
  await new Promise<void>((resolve) => s.close(() => resolve()));
  return port;
}

async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGTERM');
  const killer = setTimeout(() => child.kill('SIGKILL'), STOP_GRACE_MS);
  await exited;
  clearTimeout(killer);
}

/** Binds a UDP socket, starts the peer dialling it, and resolves with the first INVITE it sends. */
async function captureInvite(name: string, start: (port: number) => ChildProcess): Promise<SipRequest> {
  const socket = createSocket('udp4');
  await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', () => resolve()));
  const child = start(socket.address().port);
  let output = '';
  child.stdout?.on('data', (d: Buffer) => {
    output += d.toString();
  });
  child.stderr?.on('data', (d: Buffer) => {
    output += d.toString();
  });
  let timer: NodeJS.Timeout | undefined;
  try {
    return await new Promise<SipRequest>((resolve, reject) => {
      timer = setTimeout(
        () => reject(new Error(`${name} sent no INVITE within ${CAPTURE_TIMEOUT_MS} ms:\n${output}`)),
        CAPTURE_TIMEOUT_MS,
      );
      child.once('error', reject);
      socket.on('message', (data) => {
        const msg = parseMessage(data);
        if (msg.kind === 'request' && msg.method === 'INVITE') resolve(msg);
      });
    });
  } finally {
    clearTimeout(timer);
    await stop(child);
    await new Promise<void>((resolve) => socket.close(() => resolve()));
  }
}

/** Where SIPp's uac_pcap scenario finds its captures (Debian's sip-tester package). */
const SIPP_PCAP_DIR = '/usr/share/sip-tester';

/**
 * A built-in SIPp scenario dialling `service` (its Request-URI and To user): `uac` offers PCMU alone, `uac_pcap`
 * PCMA and telephone-event.
 */
export async function sippInvite(service: string, scenario: 'uac' | 'uac_pcap' = 'uac'): Promise<SipRequest> {
  const sipPort = await freeUdpPort();
  const mediaPort = await freeUdpPort();
  const cwd = mkdtempSync(join(tmpdir(), 'parley-sipp-'));
  symlinkSync(SIPP_PCAP_DIR, join(cwd, 'pcap'));
  return captureInvite('sipp', (port) =>
    spawn(
      'sipp',
      [
        '-sn',
        scenario,
        '-m',
        '1',
        '-s',
        service,
        '-i',
        '127.0.0.1',
        '-p',
        `${sipPort}`,
        '-mp',
        `${mediaPort}`,
        '-nostdin',
        `127.0.0.1:${port}`,
      ],
      { cwd, stdio: ['ignore', 'pipe', 'pipe'] },
    ),
  );
}

/**
 * baresip (as a person would run it: opus, G.722 and G.711 loaded) dialling `target` from the account `account`
 * (e.g. `sip:+14155550123@127.0.0.1`), with optional account parameters (`;audio_codecs=PCMA,PCMU`).
 */
export async function baresipInvite(
  account: string,
  target: (port: number) => string,
  accountParams = '',
): Promise<SipRequest> {
  const dir = mkdtempSync(join(tmpdir(), 'parley-baresip-'));
  mkdirSync(join(dir, 'rec'));
  const sipPort = await freeUdpPort();
  const rtpPort = (await freeUdpPort()) & ~1;
  writeFileSync(
    join(dir, 'config'),
    [
      'poll_method epoll',
      'net_interface 127.0.0.1',
      `sip_listen 127.0.0.1:${sipPort}`,
      'audio_player aufile,/dev/null',
      'audio_source ausine,440',
      `rtp_ports ${rtpPort}-${rtpPort + 9}`,
      'module_path /usr/lib/baresip/modules',
      'module opus.so',
      'module g722.so',
      'module g711.so',
      'module ausine.so',
      'module aufile.so',
      'module_tmp account.so',
      'module_app menu.so',
      '',
    ].join('\n'),
  );
  writeFileSync(join(dir, 'accounts'), `<${account}:${sipPort}>;regint=0${accountParams}\n`);
  return captureInvite('baresip', (port) =>
    spawn('baresip', ['-f', dir, '-e', `/dial ${target(port)}`, '-t', '8'], {
      cwd: dir,
      stdio: ['ignore', 'pipe', 'pipe'],
    }),
  );
}

export interface SippCallee {
  port: number;
  stop(): Promise<void>;
}

/** SIPp's built-in uas scenario on loopback, answering one call (200 with PCMU) and waiting for its BYE. */
export async function startSippUas(): Promise<SippCallee> {
  const port = await freeUdpPort();
  const mediaPort = await freeUdpPort();
  const cwd = mkdtempSync(join(tmpdir(), 'parley-sipp-uas-'));
  const child = spawn(
    'sipp',
    ['-sn', 'uas', '-m', '1', '-i', '127.0.0.1', '-p', `${port}`, '-mp', `${mediaPort}`, '-nostdin'],
    {
      cwd,
      stdio: ['ignore', 'ignore', 'ignore'],
    },
  );
  const bound = setTimeout(() => child.kill('SIGKILL'), CAPTURE_TIMEOUT_MS * 3);
  return {
    port,
    stop: async () => {
      clearTimeout(bound);
      await stop(child);
    },
  };
}
