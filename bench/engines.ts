// Offline engine costs: espeak-ng synthesis of a welcome text cold (a process per text) and from the caches (disk,
// memory), and the echo engine's per-frame cost of taking user audio (CPU ns and heap bytes per 20 ms frame at
// 16 kHz), what every conversation of the STS load benchmark pays.
// Usage: node --expose-gc --import tsx bench/engines.ts   Env: ENGINES_RUNS (5), ENGINES_FRAMES (50000).
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { pino } from 'pino';
import { createEchoEngine } from '../src/engines/echo.js';
import type { EngineHooks } from '../src/engines/engine.js';
import { createLocalTts } from '../src/engines/local-tts.js';

const RUNS = Number(process.env.ENGINES_RUNS ?? 5);
const FRAMES = Number(process.env.ENGINES_FRAMES ?? 50_000);
const TEXT = 'Hello, thank you for calling. How can I help you today?';
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const gc = (globalThis as { gc?: () => void }).gc;

async function synthesis() {
  const cold: number[] = [];
  const disk: number[] = [];
  const memory: number[] = [];
  for (let r = 0; r < RUNS; r++) {
    const dir = mkdtempSync(join(tmpdir(), 'parley-bench-tts-'));
    try {
      let t0 = performance.now();
      await createLocalTts({ cacheDir: dir }).synthesize(`${TEXT} ${r}`, 'en-us', 16000);
      cold.push(performance.now() - t0);
      const fresh = createLocalTts({ cacheDir: dir });
      t0 = performance.now();
      await fresh.synthesize(`${TEXT} ${r}`, 'en-us', 16000);
      disk.push(performance.now() - t0);
      t0 = performance.now();
      for (let i = 0; i < 1000; i++) await fresh.synthesize(`${TEXT} ${r}`, 'en-us', 16000);
      memory.push(((performance.now() - t0) / 1000) * 1000); // µs per hit
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }
  return { cold_ms_median: median(cold), disk_cache_ms_median: median(disk), memory_cache_us_median: median(memory) };
}

async function echoFrames() {
  const noop = () => {};
  const hooks: EngineHooks = {
    onInputTranscript: noop,
    onAssistantAudio: noop,
    onAssistantText: noop,
    onToolCall: noop,
    onResponseDone: noop,
    onError: noop,
  };
  const session = await createEchoEngine({
    tts: createLocalTts({ cacheDir: null }),
    voiceFor: () => 'en-us',
    log: pino({ level: 'silent' }),
  }).open(
    {
      conversationId: 'bench',
      systemPrompt: '',
      voiceId: 'grant',
      defaultLanguage: 'en',
      additionalLanguages: [],
      tools: [],
      boostedKeywords: [],
      pronunciations: [],
      signal: new AbortController().signal,
    },
    hooks,
  );
  const frame = new Int16Array(320).map((_, i) => (i * 37) % 2000);
  // Warm up: fill and drop a turn so the session's blocks exist.
  for (let i = 0; i < 500; i++) session.appendAudio(frame);
  session.clearUserTurn();
  const ns: number[] = [];
  const bytes: number[] = [];
  for (let r = 0; r < RUNS; r++) {
    gc?.();
    const heap0 = process.memoryUsage().heapUsed;
    const t0 = process.cpuUsage();
    for (let i = 0; i < FRAMES; i++) {
      session.appendAudio(frame);
      if (i % 250 === 249) session.clearUserTurn(); // 5 s turns, dropped: blocks go back to the session's pool
    }
    const cpu = process.cpuUsage(t0);
    ns.push(((cpu.user + cpu.system) * 1000) / FRAMES);
    bytes.push((process.memoryUsage().heapUsed - heap0) / FRAMES);
  }
  await session.close();
  return {
    append_ns_per_frame_median: median(ns),
    heap_bytes_per_frame_median: median(bytes),
    gc_exposed: gc !== undefined,
  };
}

const results = {
  when: new Date().toISOString(),
  runs: RUNS,
  frames: FRAMES,
  synthesis: await synthesis(),
  echo_append: await echoFrames(),
};
console.log(JSON.stringify(results, null, 2));
mkdirSync(new URL('./results/', import.meta.url), { recursive: true });
writeFileSync(new URL('./results/engines.json', import.meta.url), `${JSON.stringify(results, null, 2)}\n`);
