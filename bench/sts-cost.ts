// CPU cost of STS conversations inside one media worker, without sockets and without wall-clock pacing: N
// conversations built as the worker builds them (LiveHost, StsClient, Conversation, the echo engine from the
// engine registry, recordings on disk) fed pcm_8000 binary frames as fast as the CPU allows, in simulated time
// (one inbound frame per conversation and one pacing-clock tick per simulated 20 ms). Reported: CPU (user +
// system, all threads) per conversation-second of audio, which a shared machine's other load barely moves (it
// is CPU time, not wall time), so before/after comparisons hold where bench/sts.ts is contention-bound. What it
// leaves out is the WebSocket transport itself (uWS framing, syscalls): that is what bench/sts.ts's floor costs.
// Then every conversation ends at once (records saved, recordings gzipped): CPU per ended conversation and the
// longest event-loop stall meanwhile (a stall there delays every other conversation's audio).
// Each client speaks an Allison prompt, stays silent 3 s (the echo plays back), speaks the next, and so on.
// Usage: node --import tsx bench/sts-cost.ts     Env: COST_N (250), COST_SEC (20 simulated seconds measured),
//   COST_WARMUP_SEC (5), COST_WRITE=1 (write bench/results/sts-cost.json)
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os, { tmpdir } from 'node:os';
import { join } from 'node:path';
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
import type { Auth } from '../src/auth/authenticate.js';
import { loadSettings } from '../src/config.js';
import { Conversation } from '../src/conversation/conversation.js';
import type { ConversationStore, ConversationTimers, PacingRegistry } from '../src/conversation/host.js';
import { createLogger } from '../src/log.js';
import type { PacedStream } from '../src/media/pacing-clock.js';
import { engineLookup } from '../src/workers/engines.js';
import { tuneHeapForMedia } from '../src/workers/heap-tuning.js';
import { LiveHost, newAttachment, type Attachment } from '../src/realtime/live-host.js';
import type { FrameSink } from '../src/realtime/sink.js';
import type { NewItem } from '../src/store/conversations.js';
import { soundFile } from '../test/helpers/debian-packages.js';

const N = Number(process.env.COST_N ?? 250);
const MEASURE_SEC = Number(process.env.COST_SEC ?? 20);
const WARMUP_SEC = Number(process.env.COST_WARMUP_SEC ?? 5);
const FRAME_MS = 20;
const FRAME_BYTES = 320; // pcm_8000, 20 ms
const SILENCE_FRAMES = 150; // 3 s between prompts: the echo (at audio_speed 1.2) plays out meanwhile
const PROMPTS = ['tt-weasels', 'vm-goodbye', 'agent-pass', 'demo-congrats'].map(soundFile);

function promptFrames(path: string): ArrayBuffer[] {
  const wav = readFileSync(path);
  const at = wav.indexOf('data');
  const data = wav.subarray(at + 8, at + 8 + wav.readUInt32LE(at + 4));
  const frames: ArrayBuffer[] = [];
  for (let off = 0; off + FRAME_BYTES <= data.length; off += FRAME_BYTES)
    frames.push(data.buffer.slice(data.byteOffset + off, data.byteOffset + off + FRAME_BYTES));
  return frames;
}

const prompts = PROMPTS.map(promptFrames);
const silence = new ArrayBuffer(FRAME_BYTES);

/** The simulated clock: 20 ms frames run so far (turn latency is counted in these, not in wall time). */
let simulatedFrame = 0;
/** Simulated frames from user_finished_speaking to the reply's first audio frame, per answered turn. */
const turnLatencyFrames: number[] = [];

/** The socket side: counts what a client would receive. */
class CountingSink implements FrameSink {
  closed = false;
  readonly writable = true;
  texts = 0;
  audioFrames = 0;
  ready = false;
  private turnEndFrame = -1;
  text(data: string): boolean {
    this.texts++;
    if (!this.ready && data.includes('"ready_to_start_conversation"')) this.ready = true;
    if (data.includes('"user_finished_speaking"')) this.turnEndFrame = simulatedFrame;
    return true;
  }
  audio(): boolean {
    this.audioFrames++;
    if (this.turnEndFrame >= 0) {
      turnLatencyFrames.push(simulatedFrame - this.turnEndFrame);
      this.turnEndFrame = -1;
    }
    return true;
  }
  end(): void {
    this.closed = true;
  }
}

/** The store main answers over the worker protocol, in memory (no database in this measurement). */
class MemoryStore implements ConversationStore {
  items = 0;
  async resolveAgent() {
    return null;
  }
  async resolveProject(_orgId: string, project: string) {
    return { id: 'proj_main', name: project };
  }
  async resolveTools() {
    return [];
  }
  async admit() {
    return { admitted: true as const, active: 0, cap: 1_000_000 };
  }
  async createConversation(c: { id?: string }) {
    return { conversationId: c.id! };
  }
  async updateConversation() {
    return { updated: true };
  }
  async appendItems(_id: string, items: NewItem[]) {
    this.items += items.length;
    return { itemIds: items.map((_, i) => `item_${i}`) };
  }
  async finishConversation() {
    return { ended: true, recordingsStored: false };
  }
}

/** The worker's pacing clock, driven by the simulation instead of timers. */
class SimulatedPacing implements PacingRegistry {
  private readonly streams: PacedStream[] = [];
  private frame = 0;
  register(s: PacedStream): void {
    this.streams.push(s);
  }
  unregister(s: PacedStream): void {
    const i = this.streams.indexOf(s);
    if (i >= 0) this.streams.splice(i, 1);
  }
  tick(): void {
    const f = this.frame++;
    for (let i = 0; i < this.streams.length; i++) this.streams[i].tick(f);
  }
}

const nextTurn = () => new Promise<void>((r) => setImmediate(r));

function quantile(xs: number[], q: number): number | null {
  if (xs.length === 0) return null;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))];
}

async function main(): Promise<void> {
  tuneHeapForMedia(); // as startWorkerPool does before its workers start
  const dataDir = mkdtempSync(join(tmpdir(), 'parley-sts-cost-'));
  const settings = loadSettings({ PARLEY_DATA_DIR: dataDir, PARLEY_LOG_LEVEL: 'error' });
  const log = createLogger('error');
  const store = new MemoryStore();
  const pacing = new SimulatedPacing();
  let simulatedMs = Date.now();
  const timers: ConversationTimers = {
    now: () => simulatedMs,
    set: (fn, ms) => setTimeout(fn, ms),
    clear: (h) => clearTimeout(h as NodeJS.Timeout),
  };
  const engineFor = engineLookup(settings, log);
  const host = new LiveHost({
    workerId: 1,
    rules: { PARLEY_ALLOW_PRIVATE_ENDPOINTS: false },
    reconnectGraceMs: 0,
    post: () => undefined,
    log,
    newConversation: (client, origin) =>
      new Conversation(
        {
          client,
          store,
          engineFor,
          timers,
          pacing,
          log,
          dataDir,
          allowPrivateEndpoints: false,
          fetch: globalThis.fetch,
          nodeId: null,
        },
        origin,
      ),
  });
  const auth: Auth = { kind: 'api_key', orgId: 'org_bench', apiKeyId: 'key_bench' };
  const config = new TextEncoder().encode(
    JSON.stringify({
      type: 'config',
      input_format: 'pcm_8000',
      output_format: 'pcm_8000',
      binary_audio: true,
      vad_min_silence_duration_ms: 500,
    }),
  ).buffer;

  interface Client {
    att: Attachment;
    sink: CountingSink;
    prompt: number;
    frame: number;
  }
  const clients: Client[] = [];
  for (let i = 0; i < N; i++) {
    const att = newAttachment();
    const sink = new CountingSink();
    host.open(att, sink, auth, 'direct');
    host.message(att, sink, config.slice(0), false);
    // Start each client at another point of its cycle, as real clients would be.
    clients.push({ att, sink, prompt: i % prompts.length, frame: -((i * 7) % SILENCE_FRAMES) });
  }
  for (let i = 0; i < 2000 && clients.some((c) => !c.sink.ready); i++) await new Promise((r) => setTimeout(r, 5));
  const ready = clients.filter((c) => c.sink.ready).length;

  const step = async () => {
    for (const c of clients) {
      const frames = prompts[c.prompt];
      let buf: ArrayBuffer;
      if (c.frame >= 0 && c.frame < frames.length) buf = frames[c.frame];
      else buf = silence;
      c.frame++;
      if (c.frame >= frames.length + SILENCE_FRAMES) {
        c.frame = 0;
        c.prompt = (c.prompt + 1) % prompts.length;
      }
      host.message(c.att, c.sink, buf, true);
    }
    // The engine answers within the frame (the echo needs a turn or two of the event loop); then the clock ticks.
    await nextTurn();
    await nextTurn();
    simulatedMs += FRAME_MS;
    simulatedFrame++;
    pacing.tick();
  };

  for (let f = 0; f < (WARMUP_SEC * 1000) / FRAME_MS; f++) await step();
  turnLatencyFrames.length = 0;
  const audio0 = clients.reduce((s, c) => s + c.sink.audioFrames, 0);
  const cpu0 = process.cpuUsage();
  const wall0 = performance.now();
  const rss0 = process.memoryUsage().rss;
  for (let f = 0; f < (MEASURE_SEC * 1000) / FRAME_MS; f++) await step();
  const cpu = process.cpuUsage(cpu0);
  const wallMs = performance.now() - wall0;
  const audioOut = clients.reduce((s, c) => s + c.sink.audioFrames, 0) - audio0;
  const mem = process.memoryUsage();
  const cpuMs = (cpu.user + cpu.system) / 1000;
  const perConvSec = cpuMs / (N * MEASURE_SEC);
  const result = {
    bench: 'sts-cost',
    date: new Date().toISOString(),
    n: N,
    ready,
    simulated_sec: MEASURE_SEC,
    cpu_ms_per_conversation_second: Math.round(perConvSec * 1000) / 1000,
    /** The same cost as a share of one core for 500 real-time conversations (the goal: at most 2x the floor). */
    core_pct_at_500: Math.round(perConvSec * 500 * 10) / 100,
    us_per_inbound_frame: Math.round(((cpuMs * 1000) / ((N * (MEASURE_SEC * 1000)) / FRAME_MS)) * 10) / 10,
    user_ms: Math.round(cpu.user / 1000),
    system_ms: Math.round(cpu.system / 1000),
    wall_ms: Math.round(wallMs),
    assistant_frames_out: audioOut,
    /** Clock ticks between user_finished_speaking and the reply's first frame: 0 = sent within the same 20 ms. */
    turn_latency_frames: {
      p50: quantile(turnLatencyFrames, 0.5),
      p99: quantile(turnLatencyFrames, 0.99),
      samples: turnLatencyFrames.length,
    },
    items_written: store.items,
    heap_used_mb: Math.round(mem.heapUsed / 1048576),
    external_mb: Math.round(mem.external / 1048576),
    array_buffers_mb: Math.round(mem.arrayBuffers / 1048576),
    rss_mb: Math.round(mem.rss / 1048576),
    rss_growth_mb_during_window: Math.round((mem.rss - rss0) / 1048576),
    load_average_1m: Math.round(os.loadavg()[0] * 100) / 100,
  };
  // Ending: every conversation ends and saves its record and recording (wav.gz), as at a hang-up, all at once.
  const lag = monitorEventLoopDelay({ resolution: 5 });
  lag.enable();
  const end0 = process.cpuUsage();
  const endWall0 = performance.now();
  await host.endAll(120_000);
  const endCpu = process.cpuUsage(end0);
  lag.disable();
  const endResult = {
    ...result,
    end_wall_ms: Math.round(performance.now() - endWall0),
    /** CPU (all threads) to end and save one conversation of WARMUP + MEASURE seconds. */
    end_cpu_ms_per_conversation: Math.round(((endCpu.user + endCpu.system) / 1000 / N) * 10) / 10,
    end_event_loop_delay_max_ms: Math.round(lag.max / 1e6),
  };
  console.log(JSON.stringify(endResult));
  if (process.env.COST_WRITE === '1')
    writeFileSync(new URL('./results/sts-cost.json', import.meta.url), JSON.stringify(endResult, null, 2) + '\n');
  rmSync(dataDir, { recursive: true, force: true });
  process.exit(0);
}

await main();
