// Test harness for the worker side of a phone call: WorkerCalls with real conversations (the conversation harness's
// in-memory store, the echo or scripted engine, real timers and the real pacing clock), and a real RTP peer on
// 127.0.0.1 (node:dgram) that streams G.711 and reads what Parley sends back.
import dgram from 'node:dgram';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { pino } from 'pino';
import { Conversation } from '../../src/conversation/conversation.js';
import type { ConversationClient, ConversationOrigin, ConversationTimers } from '../../src/conversation/host.js';
import { createEchoEngine } from '../../src/engines/echo.js';
import type { SpeechEngine } from '../../src/engines/engine.js';
import { createLocalTts } from '../../src/engines/local-tts.js';
import { createScriptedEngine, type EngineScript } from '../../src/engines/scripted.js';
import { alawDecodeInto, alawEncodeInto, mulawDecodeInto, mulawEncodeInto } from '../../src/media/native/g711.js';
import { PacingClock } from '../../src/media/pacing-clock.js';
import {
  createRtpPacketView,
  decodeView,
  RtpSender,
  RTP_HEADER_BYTES,
  type RtpPacketView,
} from '../../src/media/rtp.js';
import type { CallMedia, CallMessage, WorkerNotice } from '../../src/workers/worker-protocol.js';
import type { ResolvedAgent } from '../../src/domain/conversation-agent.js';
import { WorkerCalls } from '../../src/telephony/worker-calls.js';
import { MemoryStore } from '../conversation/harness.js';

export const LOOPBACK = '127.0.0.1';
export const FRAME_SAMPLES = 160;
export const PT_PCMU = 0;
export const PT_PCMA = 8;
export const PT_EVENT = 101;

const log = pino({ level: process.env.TEST_LOG ?? 'silent' });
const tts = createLocalTts({ cacheDir: null });

export type CallAssigned = Extract<CallMessage, { type: 'call_assigned' }>;

export function media(codec: 'PCMU' | 'PCMA' | 'opus', fields: Partial<CallMedia> = {}): CallMedia {
  if (codec === 'opus')
    return {
      codec,
      payloadType: 111,
      clockRate: 48000,
      channels: 2,
      telephoneEventPayloadType: PT_EVENT,
      ptimeMs: 20,
      direction: 'sendrecv',
      ...fields,
    };
  return {
    codec,
    payloadType: codec === 'PCMU' ? PT_PCMU : PT_PCMA,
    clockRate: 8000,
    channels: 1,
    telephoneEventPayloadType: PT_EVENT,
    ptimeMs: 20,
    direction: 'sendrecv',
    ...fields,
  };
}

export function agent(config: Record<string, unknown> = {}): ResolvedAgent {
  return {
    orgId: 'org_test',
    project: { id: 'proj_main', name: 'main' },
    agent: { id: 'agent_phone', name: 'phone', enabled: true },
    // Speech at its own speed (the upsert default speeds it up), so what comes back can be compared with what went in.
    config: { audio_speed: 1, welcome_message: null, ...config },
    tools: [],
  };
}

export interface Harness {
  calls: WorkerCalls;
  store: MemoryStore;
  notices: WorkerNotice[];
  clock: PacingClock;
  conversations: Conversation[];
  /** Per conversation: frames lost (pushLost) and the first byte of each payload given (pushAudio), in order. */
  lost: number[];
  firstBytes: number[][];
  /** Per callId: whether the conversation's record was finished when call_ended was posted. */
  savedAtEnd: Map<string, boolean>;
  dataDir: string;
  close(): Promise<void>;
}

export function harness(
  opts: { engine?: 'echo' | 'scripted'; script?: EngineScript; rtpTimeoutMs?: number } = {},
): Harness {
  const store = new MemoryStore();
  const notices: WorkerNotice[] = [];
  const conversations: Conversation[] = [];
  const lost: number[] = [];
  const firstBytes: number[][] = [];
  const savedAtEnd = new Map<string, boolean>();
  const dataDir = mkdtempSync(join(tmpdir(), 'parley-call-'));
  const engine: SpeechEngine =
    opts.engine === 'scripted'
      ? createScriptedEngine({ tts, voiceFor: () => 'en-us', log, script: opts.script ?? null })
      : createEchoEngine({ tts, voiceFor: () => 'en-us', log });
  const timers: ConversationTimers = {
    now: () => Date.now(),
    set: (fn, ms) => setTimeout(fn, ms),
    clear: (h) => clearTimeout(h as NodeJS.Timeout),
  };
  const clock = new PacingClock({ onFrameEnd: () => calls.frameEnd() });
  const newConversation = (client: ConversationClient, origin: ConversationOrigin) => {
    const c = new Conversation(
      {
        client,
        store,
        engineFor: () => engine,
        timers,
        pacing: clock,
        log,
        dataDir,
        allowPrivateEndpoints: true,
        fetch: globalThis.fetch,
      },
      origin,
    );
    const k = conversations.length;
    conversations.push(c);
    lost.push(0);
    firstBytes.push([]);
    // Spies on what the call gives the conversation.
    const pushLost = c.pushLost.bind(c);
    c.pushLost = () => {
      lost[k]++;
      pushLost();
    };
    const pushAudio = c.pushAudio.bind(c);
    c.pushAudio = (bytes: Uint8Array, offset = 0, length = bytes.length) => {
      firstBytes[k].push(bytes[offset]);
      pushAudio(bytes, offset, length);
    };
    return c;
  };
  const calls = new WorkerCalls({
    workerId: 0,
    bindAddress: LOOPBACK,
    post: (n) => {
      if (n.type === 'call_ended') savedAtEnd.set(n.callId, store.records.get(n.conversationId)?.finish != null);
      notices.push(n);
    },
    loadChanged: () => undefined,
    newConversation,
    pacing: clock,
    rtpTimeoutMs: opts.rtpTimeoutMs ?? 30_000,
    log,
    maxCalls: 16,
  });
  return {
    calls,
    store,
    notices,
    clock,
    conversations,
    lost,
    firstBytes,
    savedAtEnd,
    dataDir,
    async close() {
      await calls.endAll(5000);
      clock.stop();
    },
  };
}

/** Waits (bounded, polling) until `cond` holds. */
export async function waitFor(cond: () => boolean, what: string, ms = 20_000): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(5);
  }
}

export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/** One received datagram. */
export interface Datagram {
  data: Buffer;
  port: number;
  atMs: number;
}

/** The far end of a call: an RTP socket and an RTCP socket on the next port, on 127.0.0.1. */
export class TestPeer {
  readonly rtpIn: Datagram[] = [];
  readonly rtcpIn: Datagram[] = [];
  private constructor(
    readonly rtp: dgram.Socket,
    readonly rtcp: dgram.Socket,
  ) {
    rtp.on('message', (data, info) => this.rtpIn.push({ data, port: info.port, atMs: performance.now() }));
    rtcp.on('message', (data, info) => this.rtcpIn.push({ data, port: info.port, atMs: performance.now() }));
  }

  get port(): number {
    return this.rtp.address().port;
  }

  static async open(): Promise<TestPeer> {
    for (let attempt = 0; attempt < 50; attempt++) {
      const rtp = dgram.createSocket('udp4');
      await new Promise<void>((r) => rtp.bind(0, LOOPBACK, r));
      const rtcp = dgram.createSocket('udp4');
      const ok = await new Promise<boolean>((r) => {
        rtcp.once('error', () => r(false));
        rtcp.bind(rtp.address().port + 1, LOOPBACK, () => r(true));
      });
      if (ok) return new TestPeer(rtp, rtcp);
      rtp.close();
      rtcp.close();
    }
    throw new Error('no free port pair for the test peer');
  }

  sendRtp(packet: Uint8Array, port: number): void {
    this.rtp.send(packet, port, LOOPBACK);
  }

  sendRtcp(packet: Uint8Array, port: number): void {
    this.rtcp.send(packet, port, LOOPBACK);
  }

  /** The RTP packets received, decoded (views over copies). */
  packets(): { view: RtpPacketView; payload: Uint8Array; atMs: number; port: number }[] {
    return this.rtpIn.flatMap((d) => {
      const view = createRtpPacketView();
      if (decodeView(d.data, view, d.data.length) !== 'ok') return [];
      return [
        {
          view,
          payload: new Uint8Array(d.data.subarray(view.payloadOffset, view.payloadOffset + view.payloadLength)),
          atMs: d.atMs,
          port: d.port,
        },
      ];
    });
  }

  close(): void {
    this.rtp.close();
    this.rtcp.close();
  }
}

/**
 * Assigns a call (main's call_assigned) on a free even port and starts it (call_start). Ports taken by someone else
 * are refused by the worker (call_media_ready ok: false), as main would see, and another is tried.
 */
export async function startCall(
  h: Harness,
  peer: TestPeer,
  fields: Partial<CallAssigned> & { callId: string },
  start = true,
): Promise<{ rtpPort: number; msg: CallAssigned }> {
  for (let attempt = 0; attempt < 50; attempt++) {
    const rtpPort = 20000 + 2 * Math.floor(Math.random() * 15000);
    const msg: CallAssigned = {
      type: 'call_assigned',
      conversationId: `conv_${fields.callId}`,
      rtpPort,
      remote: { address: LOOPBACK, port: peer.port },
      media: media('PCMU'),
      agent: agent(),
      origin: 'telephony-inbound',
      callInfo: {
        from_phone_number: '+14155550100',
        to_phone_number: '+14155550199',
        telephony_call_sid: fields.callId,
      },
      configurationEndpoint: null,
      overrides: null,
      listenOnly: false,
      ...fields,
    };
    const before = h.notices.length;
    h.calls.handle(msg);
    const ready = h.notices.slice(before).find((n) => n.type === 'call_media_ready' && n.callId === fields.callId);
    if (!ready || ready.type !== 'call_media_ready') throw new Error('no call_media_ready');
    if (!ready.ok) continue;
    if (start) h.calls.handle({ type: 'call_start', callId: fields.callId });
    return { rtpPort, msg };
  }
  throw new Error('no free RTP port');
}

/** G.711 payloads of 20 ms from 8 kHz PCM (the tail padded with silence). */
export function g711Frames(pcm: Int16Array, codec: 'PCMU' | 'PCMA'): Uint8Array[] {
  const frames: Uint8Array[] = [];
  for (let i = 0; i < pcm.length; i += FRAME_SAMPLES) {
    const f = new Int16Array(FRAME_SAMPLES);
    f.set(pcm.subarray(i, Math.min(pcm.length, i + FRAME_SAMPLES)));
    const out = new Uint8Array(FRAME_SAMPLES);
    if (codec === 'PCMU') mulawEncodeInto(f, out);
    else alawEncodeInto(f, out);
    frames.push(out);
  }
  return frames;
}

export function g711Decode(payload: Uint8Array, codec: 'PCMU' | 'PCMA'): Int16Array {
  const out = new Int16Array(payload.length);
  if (codec === 'PCMU') mulawDecodeInto(payload, out);
  else alawDecodeInto(payload, out);
  return out;
}

/** The peer's outgoing RTP stream: one sender (SSRC, sequence, timestamp), packets built from payloads. */
export class PeerStream {
  readonly sender: RtpSender;
  sent = 0;
  constructor(
    private readonly peer: TestPeer,
    private readonly toPort: number,
    readonly payloadType: number,
  ) {
    this.sender = new RtpSender({ payloadType, ssrc: 0x1234abcd });
  }

  /** The next packet of `payload` (advancing sequence and timestamp by one 20 ms frame). */
  packet(payload: Uint8Array, marker = false, payloadType = this.payloadType, timestamp?: number): Uint8Array {
    const out = new Uint8Array(RTP_HEADER_BYTES + payload.length);
    this.sender.writeNext(out, marker, payloadType, timestamp);
    out.set(payload, RTP_HEADER_BYTES);
    return out;
  }

  send(packet: Uint8Array): void {
    this.peer.sendRtp(packet, this.toPort);
    this.sent++;
  }

  /**
   * Sends the payloads one per 20 ms (against the monotonic clock, no drift), each `ticksPerPacket` of timestamp
   * after the last. `arrange` may drop or reorder the built packets: it gets them in order and returns what goes
   * out, one entry per 20 ms slot (null: nothing).
   */
  /**
   * Sends one slot every 20 ms; `arrange` may drop a packet (null) or put several in one slot (sent back to back, so
   * a reordered pair arrives together whatever the scheduling of this process).
   */
  async play(
    payloads: Uint8Array[],
    arrange?: (packets: Uint8Array[]) => (Uint8Array | Uint8Array[] | null)[],
    ticksPerPacket = FRAME_SAMPLES,
  ): Promise<void> {
    const packets = payloads.map((p, i) => {
      const pkt = this.packet(p, i === 0);
      this.sender.advanceTimestamp(ticksPerPacket);
      return pkt;
    });
    const slots = arrange ? arrange(packets) : packets;
    const start = performance.now();
    for (let i = 0; i < slots.length; i++) {
      const due = start + i * 20;
      const wait = due - performance.now();
      if (wait > 0) await sleep(wait);
      const p = slots[i];
      if (Array.isArray(p)) for (const one of p) this.send(one);
      else if (p) this.send(p);
    }
  }
}

/** RMS per 20 ms frame (of `frame` samples: 160 at 8 kHz). */
export function envelope(pcm: Int16Array, frame = FRAME_SAMPLES): number[] {
  const out: number[] = [];
  for (let i = 0; i + frame <= pcm.length; i += frame) {
    let s = 0;
    for (let j = i; j < i + frame; j++) s += pcm[j] * pcm[j];
    out.push(Math.sqrt(s / frame));
  }
  return out;
}

/** The best normalised correlation of `probe` against `signal` over every lag (probe within signal). */
export function bestCorrelation(signal: number[], probe: number[]): { r: number; lag: number } {
  let best = { r: -1, lag: -1 };
  const n = probe.length;
  const mean = (a: number[]) => a.reduce((x, y) => x + y, 0) / a.length;
  const mp = mean(probe);
  for (let lag = 0; lag + n <= signal.length; lag++) {
    const w = signal.slice(lag, lag + n);
    const mw = mean(w);
    let num = 0;
    let dp = 0;
    let dw = 0;
    for (let i = 0; i < n; i++) {
      num += (probe[i] - mp) * (w[i] - mw);
      dp += (probe[i] - mp) ** 2;
      dw += (w[i] - mw) ** 2;
    }
    const r = dp > 0 && dw > 0 ? num / Math.sqrt(dp * dw) : 0;
    if (r > best.r) best = { r, lag };
  }
  return best;
}

/** The notice of `type` for `callId`, if posted. */
export function notice<T extends WorkerNotice['type']>(
  h: Harness,
  type: T,
  callId: string,
): Extract<WorkerNotice, { type: T }> | undefined {
  return h.notices.find((n) => n.type === type && 'callId' in n && n.callId === callId) as
    Extract<WorkerNotice, { type: T }> | undefined;
}
