// A Parley node for the transfer tests, as a user runs it (src/main.ts in a child process, PostgreSQL, one media
// worker): SIP on a free port, one trunk for the peers on loopback (inbound from 127.0.0.1, REFER allowed or not,
// outbound to the transfer target's port), the scripted engine calling the transfer tool in its welcome, and an
// agent owning AGENT_NUMBER with that tool. Plus baresip peers with their own audio sources and recordings.
import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import wavefile from 'wavefile';
import { BARESIP_MODULES_DIR } from '../helpers/debian-packages.js';
import { createTempDatabase, type TempDatabase } from '../helpers/temp-database.js';
import { until } from '../helpers/wait.js';
import { BaresipCtl, fillTemplate, Peer, tempDir } from '../sip/peers/peers.js';
import { startNode, type NodeProcess } from '../realtime/node-process.js';
import { freeUdpPort } from './sipp-scenario.js';

export const KEY = 'bootstrap-key-for-transfer-tests-0123456789';
export const AGENT_NUMBER = '+14155550100';
export const CALLER_NUMBER = '+14155550123';
export const TARGET_NUMBER = '+15550001111';
export const TOOL_NAME = 'transfer_desk';

export async function freeTcpPort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', () => resolve()));
  const { port } = s.address() as { port: number };
  await new Promise<void>((resolve) => s.close(() => resolve()));
  return port;
}

/** A free even port whose successor is free too, at random in [min, max): RTP and RTCP of a peer. */
export function randomRange(min: number, max: number, size: number): { first: number; last: number } {
  const first = (min + Math.floor(Math.random() * ((max - min - size) / 2)) * 2) & ~1;
  return { first, last: first + size - 1 };
}

export interface TransferNode {
  node: NodeProcess;
  db: TempDatabase;
  sipPort: number;
  api(method: string, path: string, body?: unknown): Promise<{ status: number; body: any }>;
  /** The conversation of the one call, once ended: its record as the API shows it. */
  endedConversation(): Promise<any>;
  close(): Promise<void>;
}

export interface TransferNodeOptions {
  allowRefer: boolean;
  /** Where the outbound trunk sends the transfer's INVITE (the target's SIP port on 127.0.0.1). */
  targetPort: number;
  /** The transfer tool's fields over its defaults. */
  tool: Record<string, unknown>;
  /** What the agent says before the call (its welcome response) and after the tool's output. */
  say?: string;
  after?: string;
  env?: Record<string, string>;
}

export async function startTransferNode(opts: TransferNodeOptions): Promise<TransferNode> {
  const dir = tempDir('transfer-node');
  const db = await createTempDatabase('parley_test_transfer');
  const sipPort = await freeUdpPort();
  const trunks = {
    trunks: [
      {
        name: 'peers',
        inbound: { sources: ['127.0.0.1'], allow_refer: opts.allowRefer },
        outbound: { uri: `sip:127.0.0.1:${opts.targetPort}` },
      },
    ],
  };
  writeFileSync(join(dir, 'trunks.json'), JSON.stringify(trunks));
  const script = {
    responses: [
      {
        say: opts.say ?? '',
        tool_calls: [{ name: TOOL_NAME, arguments: {} }],
        after_tool_output: { say: opts.after ?? 'The transfer did not go through.' },
      },
    ],
  };
  writeFileSync(join(dir, 'script.json'), JSON.stringify(script));
  const rtp = randomRange(41000, 48000, 200);
  const node = await startNode({
    DATABASE_URL: db.url,
    PARLEY_BOOTSTRAP_API_KEY: KEY,
    PARLEY_DATA_DIR: dir,
    PARLEY_SIP_PORT: `${sipPort}`,
    PARLEY_TRUNKS_FILE: join(dir, 'trunks.json'),
    PARLEY_ENGINE_DEFAULT: 'scripted',
    PARLEY_SCRIPTED_ENGINE_FILE: join(dir, 'script.json'),
    PARLEY_RTP_PORT_MIN: `${rtp.first}`,
    PARLEY_RTP_PORT_MAX: `${rtp.last}`,
    PARLEY_LOG_LEVEL: 'debug',
    ...opts.env,
  });
  const api = async (method: string, path: string, body?: unknown) => {
    const r = await fetch(`${node.url}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${KEY}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: r.status, body: (await r.json().catch(() => null)) as any };
  };
  const close = async () => {
    node.kill('SIGTERM');
    await node.exited;
    await db.drop();
  };
  try {
    const tool = await api('POST', '/v1/tools', {
      name: TOOL_NAME,
      description: 'Transfer the caller to the front desk',
      type: 'built_in_transfer_to_phone_number',
      execution_mode: 'sync',
      phone_number: TARGET_NUMBER,
      ...opts.tool,
    });
    if (tool.status !== 201) throw new Error(`tool: ${tool.status} ${JSON.stringify(tool.body)}`);
    const agent = await api('PUT', '/v1/agents/upsert', {
      name: 'front',
      phone_number: 'custom',
      custom_phone_numbers: [AGENT_NUMBER],
      tools: [TOOL_NAME],
      generate_welcome_message: true,
      is_welcome_message_interruptible: false,
      audio_speed: 1,
    });
    if (agent.status !== 200) throw new Error(`agent: ${agent.status} ${JSON.stringify(agent.body)}`);
  } catch (err) {
    await close();
    throw err;
  }
  return {
    node,
    db,
    sipPort,
    api,
    close,
    async endedConversation() {
      let conv: any = null;
      await until(
        async () => {
          const list = await api('GET', '/v1/conversations');
          const first = list.body?.conversations?.[0];
          if (!first) return false;
          const one = await api('GET', `/v1/conversations/${first.id}`);
          conv = one.body?.conversation ?? one.body;
          return conv?.ended_by != null;
        },
        { timeoutMs: 60_000, intervalMs: 250, what: () => `the conversation to end\n${node.output().slice(-4000)}` },
      );
      return conv;
    },
  };
}

/** The transfer tool call of a conversation record (its response_body is the transfer's outcome). */
export function transferCall(conv: any): any {
  for (const item of conv.items ?? conv.transcript_items ?? []) {
    for (const c of item.tool_calls ?? []) if (c.tool?.name === TOOL_NAME) return c;
  }
  return null;
}

/** A WAV of `seconds`: silence, then a tone of `hz` (0: silence throughout) from `toneFromSec`. */
export function toneWav(dir: string, name: string, hz: number, seconds: number, toneFromSec = 0): string {
  const out = join(dir, name);
  const args =
    hz === 0
      ? ['-n', '-r', '8000', '-c', '1', '-b', '16', '-e', 'signed-integer', out, 'trim', '0', `${seconds}`]
      : [
          '-n',
          '-r',
          '8000',
          '-c',
          '1',
          '-b',
          '16',
          '-e',
          'signed-integer',
          out,
          'synth',
          `${seconds - toneFromSec}`,
          'sine',
          `${hz}`,
          'vol',
          '0.3',
          'pad',
          `${toneFromSec}`,
          '0',
        ];
  const r = spawnSync('sox', args, { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`sox failed: ${r.stderr}`);
  return out;
}

export interface Baresip {
  peer: Peer;
  ctl: BaresipCtl;
  sipPort: number;
  /** The WAVs it recorded (what it heard: `-dec.wav`). */
  heard(): Int16Array[];
  stop(): Promise<void>;
}

/**
 * baresip from test/fixtures/baresip as `user`, its microphone `audioIn`, recording what it hears; `codecs` its
 * account's audio_codecs (PCMU,PCMA by default).
 */
export async function startBaresipPeer(user: string, audioIn: string, codecs = 'PCMU,PCMA'): Promise<Baresip> {
  const dir = tempDir('baresip-transfer');
  const rec = join(dir, 'rec');
  mkdirSync(rec);
  const sipPort = await freeUdpPort();
  const ctrlPort = await freeTcpPort();
  const rtp = randomRange(30000, 39000, 20);
  const fields = {
    SIP_PORT: `${sipPort}`,
    CTRL_PORT: `${ctrlPort}`,
    RTP_PORTS: `${rtp.first}-${rtp.last}`,
    AUDIO_IN: audioIn,
    REC_DIR: rec,
    USER: user,
    MODULE_PATH: BARESIP_MODULES_DIR,
  };
  writeFileSync(join(dir, 'config'), fillTemplate('baresip/config.template', fields));
  writeFileSync(
    join(dir, 'accounts'),
    fillTemplate('baresip/accounts.template', fields).replace('audio_codecs=PCMU,PCMA', `audio_codecs=${codecs}`),
  );
  const peer = new Peer('baresip', spawn('baresip', ['-f', dir], { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] }));
  let ctl: BaresipCtl;
  try {
    ctl = await BaresipCtl.connect(ctrlPort, 5000, peer);
  } catch (err) {
    await peer.stop();
    throw err;
  }
  return {
    peer,
    ctl,
    sipPort,
    heard: () =>
      readdirSync(rec)
        .filter((f) => f.endsWith('-dec.wav'))
        .sort()
        .map((f) => {
          const wav = new wavefile.WaveFile();
          wav.fromBuffer(readFileSync(join(rec, f)));
          return Int16Array.from(wav.getSamples(false, Int16Array) as unknown as ArrayLike<number>);
        }),
    stop: async () => {
      ctl.close();
      await peer.stop();
    },
  };
}

/** Goertzel power of `hz` relative to the signal's power over `pcm` (8 kHz): near 1 for a pure tone of hz. */
function blockShare(pcm: Int16Array, hz: number): number {
  const n = pcm.length;
  if (n === 0) return 0;
  const w = (2 * Math.PI * hz) / 8000;
  const coeff = 2 * Math.cos(w);
  let s1 = 0;
  let s2 = 0;
  let energy = 0;
  for (let i = 0; i < n; i++) {
    const s0 = pcm[i] + coeff * s1 - s2;
    s2 = s1;
    s1 = s0;
    energy += pcm[i] * pcm[i];
  }
  const power = s1 * s1 + s2 * s2 - coeff * s1 * s2;
  return energy === 0 ? 0 : (2 * power) / (n * energy);
}

/** Samples per block of toneShare: 50 ms, whose Goertzel bins fall on 440 and 1000 Hz exactly. */
const SHARE_BLOCK = 400;

/**
 * The median, over 50 ms blocks with signal, of the share of their power at `hz` (8 kHz): near 1 where a tone of hz
 * is heard. Per block, so that a relay's occasional gap (a lost or late frame) does not break a whole-file measure.
 */
export function toneShare(pcm: Int16Array, hz: number): number {
  const shares: number[] = [];
  for (let at = 0; at + SHARE_BLOCK <= pcm.length; at += SHARE_BLOCK) {
    const block = pcm.subarray(at, at + SHARE_BLOCK);
    if (rms(block) > 100) shares.push(blockShare(block, hz));
  }
  if (shares.length === 0) return 0;
  shares.sort((x, y) => x - y);
  return shares[Math.floor(shares.length / 2)]!;
}

/** Root mean square of `pcm`. */
export function rms(pcm: Int16Array): number {
  let e = 0;
  for (const s of pcm) e += s * s;
  return pcm.length === 0 ? 0 : Math.sqrt(e / pcm.length);
}
