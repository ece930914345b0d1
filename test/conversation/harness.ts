// Test harness for the conversation engine: a manual clock and pacing clock (frame counts, no wall clock), an
// in-memory ConversationStore, a recording ConversationClient, the scripted engine speaking tones (never espeak-ng, so
// results do not depend on what is installed), real recorded speech as the user.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { Conversation } from '../../src/conversation/conversation.js';
import type {
  ConversationClient,
  ConversationStore,
  ConversationTimers,
  PacingRegistry,
} from '../../src/conversation/host.js';
import type { SpeechEngine } from '../../src/engines/engine.js';
import type { WebSearch } from '../../src/engines/web-search.js';
import { createScriptedEngine, parseScript, type EngineScript } from '../../src/engines/scripted.js';
export { parseScript };
import type { PacedStream } from '../../src/media/pacing-clock.js';
import type { ServerEvent, ConfigMessage } from '../../src/schemas/sts.js';
import type { ResolvedAgent } from '../../src/domain/conversation-agent.js';
import type { Finish, NewConversation, NewItem, NewRecording } from '../../src/store/conversations.js';
import { toneTts } from '../helpers/speech.js';
import { loadPrompt } from '../media/speech.js';

export const FRAME_MS = 20;

export class ManualTimers implements ConversationTimers {
  private t = Date.UTC(2026, 10, 22, 17, 0, 0);
  private seq = 0;
  private readonly due = new Map<number, { at: number; fn: () => void }>();
  now(): number {
    return this.t;
  }
  set(fn: () => void, delayMs: number): unknown {
    const id = ++this.seq;
    this.due.set(id, { at: this.t + delayMs, fn });
    return id;
  }
  clear(handle: unknown): void {
    this.due.delete(handle as number);
  }
  get pending(): number {
    return this.due.size;
  }
  /** Moves time on, firing what falls due in order. */
  advance(ms: number): void {
    const end = this.t + ms;
    for (;;) {
      let next: [number, { at: number; fn: () => void }] | undefined;
      for (const e of this.due) if (e[1].at <= end && (!next || e[1].at < next[1].at)) next = e;
      if (!next) break;
      this.due.delete(next[0]);
      this.t = next[1].at;
      next[1].fn();
    }
    this.t = end;
  }
}

export class ManualPacing implements PacingRegistry {
  readonly streams = new Set<PacedStream>();
  private frame = 0;
  constructor(private readonly timers: ManualTimers) {}
  register(s: PacedStream): void {
    this.streams.add(s);
  }
  unregister(s: PacedStream): void {
    this.streams.delete(s);
  }
  /** One clock frame: 20 ms pass, then every stream ticks. */
  tick(): void {
    this.timers.advance(FRAME_MS);
    for (const s of this.streams) s.tick(this.frame);
    this.frame++;
  }
}

export type Logged = ServerEvent | { type: 'audio'; bytes: number; text: string };

export class RecordingClient implements ConversationClient {
  readonly log: Logged[] = [];
  closed: { code: number; reason: string } | null = null;
  backpressure = false;
  send(event: ServerEvent): void {
    this.log.push(event);
  }
  sendAudio(frame: Uint8Array, text: string): boolean {
    if (this.backpressure) return false;
    this.log.push({ type: 'audio', bytes: frame.length, text });
    return true;
  }
  close(code: number, reason: string): void {
    this.closed = { code, reason };
  }
  /** Event types in order, audio frames collapsed to one 'audio' per run. */
  get types(): string[] {
    const out: string[] = [];
    for (const e of this.log) if (e.type !== 'audio' || out[out.length - 1] !== 'audio') out.push(e.type);
    return out;
  }
  count(type: string): number {
    return this.log.filter((e) => e.type === type).length;
  }
  index(type: string, from = 0): number {
    return this.log.findIndex((e, i) => i >= from && e.type === type);
  }
  events<T extends ServerEvent['type']>(type: T): Extract<ServerEvent, { type: T }>[] {
    return this.log.filter((e) => e.type === type) as Extract<ServerEvent, { type: T }>[];
  }
}

export interface StoredRecord {
  conversation: NewConversation;
  items: NewItem[];
  finish: Finish | null;
  recordings: NewRecording[];
  patches: unknown[];
}

export class MemoryStore implements ConversationStore {
  readonly agents = new Map<string, ResolvedAgent>();
  readonly tools = new Map<string, { id: string; name: string; definition: Record<string, unknown> }>();
  readonly records = new Map<string, StoredRecord>();
  cap = 10;
  active = new Set<string>();
  canceled = new Set<string>();
  async resolveAgent(_orgId: string, _project: string, agent: string) {
    return this.agents.get(agent) ?? null;
  }
  async resolveProject(_orgId: string, project: string) {
    return project === 'main' ? { id: 'proj_main', name: 'main' } : null;
  }
  async resolveTools(_orgId: string, _projectId: string, names: string[]) {
    return names.flatMap((n) => (this.tools.has(n) ? [this.tools.get(n)!] : []));
  }
  async admit(_orgId: string, _projectId: string, conversationId: string) {
    if (this.active.size >= this.cap)
      return { admitted: false as const, reason: 'at_capacity' as const, active: this.active.size, cap: this.cap };
    this.active.add(conversationId);
    return { admitted: true as const, active: this.active.size, cap: this.cap };
  }
  async createConversation(conversation: NewConversation) {
    this.records.set(conversation.id!, { conversation, items: [], finish: null, recordings: [], patches: [] });
    return { conversationId: conversation.id! };
  }
  async updateConversation(id: string, patch: unknown) {
    const r = this.records.get(id)!;
    if (r.finish || this.canceled.has(id)) return { updated: false };
    r.patches.push(patch);
    return { updated: true };
  }
  async appendItems(id: string, items: NewItem[]) {
    const r = this.records.get(id)!;
    if (r.finish) return { itemIds: [] };
    r.items.push(...items);
    return { itemIds: items.map((_, i) => `item_${r.items.length - items.length + i}`) };
  }
  async finishConversation(id: string, finish: Finish, recordings: NewRecording[]) {
    const r = this.records.get(id);
    // As the store: a finish of a conversation without a record frees its slot and ends nothing.
    if (!r) {
      this.active.delete(id);
      return { ended: false, recordingsStored: false };
    }
    if (r.finish) return { ended: false, recordingsStored: false };
    r.finish = finish;
    r.recordings = recordings;
    this.active.delete(id);
    return { ended: true, recordingsStored: recordings.length > 0 };
  }
  only(): StoredRecord {
    const all = [...this.records.values()];
    if (all.length !== 1) throw new Error(`expected one conversation, have ${all.length}`);
    return all[0];
  }
}

/** The tone backend of the local TTS: the same speech whether espeak-ng is installed or not. */
const tts = toneTts();
const log = pino({ level: process.env.TEST_LOG ?? 'silent' });

export interface Setup {
  conv: Conversation;
  client: RecordingClient;
  store: MemoryStore;
  timers: ManualTimers;
  pacing: ManualPacing;
  dataDir: string;
}

export function setup(
  opts: {
    store?: MemoryStore;
    fetch?: typeof fetch;
    script?: EngineScript;
    engine?: SpeechEngine;
    webSearch?: WebSearch;
  } = {},
): Setup {
  const timers = new ManualTimers();
  const pacing = new ManualPacing(timers);
  const client = new RecordingClient();
  const store = opts.store ?? new MemoryStore();
  const dataDir = mkdtempSync(join(tmpdir(), 'parley-conv-'));
  const engine =
    opts.engine ?? createScriptedEngine({ tts, voiceFor: () => 'en-us', log, script: opts.script ?? null });
  const conv = new Conversation(
    {
      client,
      store,
      engineFor: () => engine,
      timers,
      pacing,
      log,
      dataDir,
      allowPrivateEndpoints: true,
      fetch: opts.fetch ?? globalThis.fetch,
      webSearch: opts.webSearch,
    },
    { orgId: 'org_test', origin: 'web' },
  );
  return { conv, client, store, timers, pacing, dataDir };
}

/** Inline config with test defaults: 8 kHz PCM in, 16 kHz PCM out, no speed-up. */
export function config(fields: Partial<ConfigMessage> & { scripted_engine?: unknown }): ConfigMessage {
  return {
    type: 'config',
    input_format: 'pcm_8000',
    output_format: 'pcm_16000',
    audio_speed: 1,
    ...fields,
  } as ConfigMessage;
}

/** Ticks the pacing clock until `cond` holds (engine audio may still be arriving); returns the ticks run. */
export async function tickUntil(s: Setup, cond: () => boolean, what: string, maxTicks = 3000): Promise<number> {
  for (let i = 0; i < maxTicks; i++) {
    if (cond()) return i;
    s.pacing.tick();
    // A real millisecond per tick: engine audio (synthesis, tools over HTTP) arrives on later event-loop turns.
    await new Promise((r) => setTimeout(r, 1));
  }
  throw new Error(`no ${what} after ${maxTicks} ticks`);
}

/** A real speech prompt as 20 ms frames of pcm_8000 bytes, followed by `silenceMs` of silence. */
export function speechFrames(prompt: string, silenceMs = 1200): Uint8Array[] {
  const pcm = loadPrompt(prompt);
  const total = pcm.length + (8000 * silenceMs) / 1000;
  const all = new Int16Array(Math.ceil(total / 160) * 160);
  all.set(pcm);
  const frames: Uint8Array[] = [];
  for (let i = 0; i < all.length; i += 160) frames.push(new Uint8Array(all.buffer.slice(i * 2, (i + 160) * 2)));
  return frames;
}

/** Sends user frames at real pace: one frame in, one pacing tick. */
export async function speak(s: Setup, frames: Uint8Array[], onFrame?: (i: number) => void): Promise<void> {
  for (let i = 0; i < frames.length; i++) {
    s.conv.pushAudio(frames[i]);
    onFrame?.(i);
    s.pacing.tick();
    await new Promise((r) => setImmediate(r));
  }
}
