import t from 'tap';
import { readFileSync } from 'node:fs';
import { pino } from 'pino';
import { audioBlockPool } from '../../src/media/audio-block-pool.js';
import { createEchoEngine, ECHO_ACKNOWLEDGEMENT } from '../../src/engines/echo.js';
import { EngineError, type SpeechEngineSession } from '../../src/engines/engine.js';
import { createLocalTts, parseWav, resample, TONE_GAP_MS, TONE_WORD_MS } from '../../src/engines/local-tts.js';
import { soundFile } from '../helpers/debian-packages.js';
import { toneTts } from '../helpers/speech.js';
import { energy, Recorder, sessionOptions } from './recorder.js';

const log = pino({ level: 'silent' });
t.setTimeout(60_000);

t.test('echo plays each user turn back, sample for sample, and reports its transcript as unknown', async (t) => {
  const wav = parseWav(readFileSync(soundFile('hello-world')));
  t.equal(wav.sampleRate, 8000, 'the prompt is 8 kHz');
  const speech = resample(wav.pcm, 8000, 16000);
  const engine = createEchoEngine({ tts: toneTts(), voiceFor: () => 'en-us', log });
  const hooks = new Recorder();
  const session = await engine.open(sessionOptions(), hooks);
  t.equal(session.sampleRate, 16000);
  t.equal(session.transcribesLive, false);

  // A dropped turn is forgotten: only what follows the clear is echoed.
  session.appendAudio(new Int16Array(320).fill(1234));
  session.clearUserTurn();
  for (let at = 0; at < speech.length; at += 320)
    session.appendAudio(speech.subarray(at, Math.min(speech.length, at + 320)));
  session.commitUserTurn();
  t.same(hooks.events[0], { kind: 'transcript', text: '', final: true }, 'the transcript is final and empty at once');
  await hooks.untilKind('done');
  const responseId = (hooks.events.find((e) => e.kind === 'done') as { responseId: string }).responseId;
  const echoed = hooks.samplesOf(responseId);
  t.equal(echoed.length, speech.length, 'as long as the turn');
  t.same(Array.from(echoed), Array.from(speech), 'the very samples of the turn');
  t.ok(energy(echoed) > 100, 'real speech, not silence');
  t.equal(hooks.kinds().filter((k) => k === 'text').length, 0, 'no text: echo has no words');
  await session.close();
});

t.test(
  "an echo session runs at an 8 kHz client's own rate, at 16 kHz for any other, at a configured rate always",
  async (t) => {
    const tts = toneTts();
    const rateFor = async (clientSampleRate: number | undefined, sampleRate?: 8000 | 16000 | 24000) => {
      const engine = createEchoEngine({ tts, voiceFor: () => 'en-us', log, sampleRate });
      const session = await engine.open(sessionOptions({ clientSampleRate }), new Recorder());
      await session.close();
      return session.sampleRate;
    };
    t.equal(await rateFor(8000), 8000, 'pcm_8000 / G.711 clients: no resampling in or out');
    t.equal(await rateFor(16000), 16000);
    t.equal(await rateFor(48000), 16000, 'wideband clients get the wideband default');
    t.equal(await rateFor(undefined), 16000, 'unknown client rate: the default');
    t.equal(await rateFor(8000, 24000), 24000, 'a configured rate wins');

    // An 8 kHz session echoes 8 kHz samples as they came and speaks at 8 kHz.
    const hooks = new Recorder();
    const session = await createEchoEngine({ tts, voiceFor: () => 'en-us', log }).open(
      sessionOptions({ clientSampleRate: 8000 }),
      hooks,
    );
    const turn = Int16Array.from({ length: 800 }, (_, i) => (i * 37) % 2000);
    for (let at = 0; at < turn.length; at += 160) session.appendAudio(turn.subarray(at, at + 160));
    session.commitUserTurn();
    await hooks.untilKind('done');
    const echoedId = (hooks.events.find((e) => e.kind === 'done') as { responseId: string }).responseId;
    t.same(Array.from(hooks.samplesOf(echoedId)), Array.from(turn), 'the very 8 kHz samples');
    const id = session.speak('one two');
    await hooks.untilDone(id);
    t.equal(
      hooks.samplesOf(id).length,
      (2 * (TONE_WORD_MS + TONE_GAP_MS) * 8000) / 1000,
      'speech synthesized at 8 kHz',
    );
    await session.close();
  },
);

t.test('without espeak-ng, echo speaks a tone pattern as long as the text', async (t) => {
  const tts = toneTts();
  const engine = createEchoEngine({ tts, voiceFor: () => 'en-us', log });
  const hooks = new Recorder();
  const session = await engine.open(sessionOptions(), hooks);
  const id = session.speak('one two three four');
  await hooks.untilDone(id);
  t.equal(tts.backend, 'tones');
  const pcm = hooks.samplesOf(id);
  t.equal(pcm.length, (4 * (TONE_WORD_MS + TONE_GAP_MS) * 16000) / 1000, 'four words of tone and gap');
  t.ok(energy(pcm) > 1000, 'audible tones');
  const ack = session.createResponse('ignored without a model');
  await hooks.untilDone(ack);
  t.ok(
    hooks.events.some((e) => e.kind === 'text' && e.responseId === ack && e.delta === ECHO_ACKNOWLEDGEMENT),
    'createResponse speaks the fixed acknowledgement',
  );
  await session.close();
});

t.test('a canceled response says nothing more, not even done', async (t) => {
  const tts = toneTts();
  const hooks = new Recorder();
  const session = await createEchoEngine({ tts, voiceFor: () => 'en-us', log }).open(sessionOptions(), hooks);
  const id = session.speak('a long sentence of many words that takes several seconds to play out');
  hooks.onEvent = (e) => {
    if (e.kind === 'audio') session.cancelResponse(id, 0);
  };
  await hooks.untilKind('audio');
  const next = session.speak('next');
  await hooks.untilDone(next);
  t.equal(hooks.events.filter((e) => e.kind === 'audio' && e.responseId === id).length, 1, 'one chunk, then silence');
  t.notOk(
    hooks.events.some((e) => e.kind === 'done' && e.responseId === id),
    'no done for the canceled response',
  );
  await session.close();
});

t.test('a text-to-speech failure surfaces as onError, never a throw', async (t) => {
  const tts = createLocalTts({ cacheDir: null, espeakBinary: 'false' });
  const hooks = new Recorder();
  const session = await createEchoEngine({ tts, voiceFor: () => 'en-us', log }).open(sessionOptions(), hooks);
  session.speak('this fails');
  await hooks.untilKind('error');
  const e = hooks.events.find((x) => x.kind === 'error') as { error: EngineError };
  t.ok(e.error instanceof EngineError);
  t.equal(e.error.engine, 'echo');
  t.match(e.error.message, /espeak-ng failed/);
  await session.close();
});

t.test('open rejects with EngineError once the conversation has ended', async (t) => {
  const ac = new AbortController();
  ac.abort();
  const engine = createEchoEngine({ tts: toneTts(), voiceFor: () => 'en-us', log });
  await t.rejects(engine.open(sessionOptions({ signal: ac.signal }), new Recorder()), EngineError);
});

t.test('turn blocks are reused without mixing turns; a turn over the cap keeps its latest audio', async (t) => {
  const engine = createEchoEngine({ tts: toneTts(), voiceFor: () => 'en-us', log });
  const hooks = new Recorder();
  const session = await engine.open(sessionOptions(), hooks);
  const turnOf = (value: number, samples: number) => speakTurn(session, value, samples);
  turnOf(1000, 40_000); // 2.5 blocks
  await hooks.untilKind('done', 1);
  turnOf(-2000, 17_000); // reuses the first turn's blocks
  await hooks.untilKind('done', 2);
  const [a, b] = hooks.events
    .filter((e) => e.kind === 'done')
    .map((e) => hooks.samplesOf((e as { responseId: string }).responseId));
  t.equal(a.length, 40_000);
  t.ok(
    a.every((v) => v === 1000),
    'first turn intact',
  );
  t.equal(b.length, 17_000);
  t.ok(
    b.every((v) => v === -2000),
    'second turn holds none of the first',
  );

  for (let s = 0; s < 62; s++) for (let f = 0; f < 50; f++) session.appendAudio(new Int16Array(320).fill(s));
  session.commitUserTurn();
  await hooks.untilKind('done', 3);
  const long = hooks.samplesOf((hooks.events.filter((e) => e.kind === 'done')[2] as { responseId: string }).responseId);
  t.equal(long.length, 60 * 16000, 'at most 60 s');
  t.equal(long[0], 2, 'the oldest seconds were dropped');
  t.equal(long.at(-1), 61, 'the latest kept');
  await session.close();
});

t.test(
  'a session that held a long turn reuses its blocks for the next long turn: no new block in steady state',
  async (t) => {
    /**
     * Records which blocks the played audio came from (the playback lends views of the turn's blocks; blocks are
     * 1 s views of the pool's slabs, so a block is its buffer and its 32,000-byte place in it).
     */
    class BufferRecorder extends Recorder {
      readonly buffers = new Map<string, Set<string>>();
      private readonly bufferIds = new Map<ArrayBufferLike, number>();
      override onAssistantAudio(responseId: string, pcm: Int16Array): void {
        super.onAssistantAudio(responseId, pcm);
        const set = this.buffers.get(responseId) ?? new Set<string>();
        if (!this.bufferIds.has(pcm.buffer)) this.bufferIds.set(pcm.buffer, this.bufferIds.size);
        set.add(`${this.bufferIds.get(pcm.buffer)}:${Math.floor(pcm.byteOffset / (16000 * 2))}`);
        this.buffers.set(responseId, set);
      }
    }
    const engine = createEchoEngine({ tts: toneTts(), voiceFor: () => 'en-us', log });
    const hooks = new BufferRecorder();
    const session = await engine.open(sessionOptions(), hooks);
    const SEC = 16000;
    const turnOf = (value: number, sec: number) => {
      for (let f = 0; f < sec * 50; f++) session.appendAudio(new Int16Array(SEC / 50).fill(value));
      session.commitUserTurn();
    };
    const played: Set<string>[] = [];
    for (let i = 0; i < 3; i++) {
      turnOf(i + 1, 10);
      await hooks.untilKind('done', i + 1);
      await new Promise((r) => setImmediate(r)); // the blocks go back once the response has finished, after done
      const id = (hooks.events.filter((e) => e.kind === 'done')[i] as { responseId: string }).responseId;
      t.ok(
        hooks.samplesOf(id).every((v) => v === i + 1),
        `turn ${i + 1} played intact`,
      );
      played.push(hooks.buffers.get(id)!);
    }
    t.equal(played[0].size, 10, 'a 10 s turn is held in ten 1 s blocks');
    t.same(
      [...played[1]].filter((b) => !played[0].has(b)),
      [],
      'the second 10 s turn is all blocks of the first (a fixed 4-block free list allocated 6 again)',
    );
    t.same(
      [...played[2]].filter((b) => !played[0].has(b)),
      [],
      'and so is the third',
    );
    await session.close();
  },
);

t.test(
  'updateSession (a transfer): the next response speaks with the new voice and pronunciations; one under way keeps its own',
  async (t) => {
    const tts = toneTts();
    const engine = createEchoEngine({ tts, voiceFor: (id) => (id === 'sarah' ? 'en-us+m3' : 'en-us'), log });
    const hooks = new Recorder();
    const session = await engine.open(sessionOptions({ voiceId: 'grant' }), hooks);
    const text = 'Your invoice is ready.';
    const before = session.speak(text);
    session.updateSession({ voiceId: 'sarah', pronunciations: [{ word: 'invoice', pronunciation: 'bill' }] });
    t.equal(session.voiceId, 'sarah');
    const after = session.speak(text);
    await hooks.untilDone(after);
    await hooks.untilDone(before);
    const oldVoice = await tts.synthesize(text, 'en-us', 16000);
    const newVoice = await tts.synthesize('Your bill is ready.', 'en-us+m3', 16000);
    t.not(Array.from(oldVoice).join(), Array.from(newVoice).join(), 'the two voices sound different');
    t.same(Array.from(hooks.samplesOf(before)), Array.from(oldVoice), 'the response asked for first: the old voice');
    t.same(Array.from(hooks.samplesOf(after)), Array.from(newVoice), 'the next: new voice and pronunciations');
    await session.close();
  },
);

t.test('without espeak-ng another voice is another tone pattern, as long', async (t) => {
  const tts = toneTts();
  const a = await tts.synthesize('one two three', 'en-us', 16000);
  const b = await tts.synthesize('one two three', 'en-us+m3', 16000);
  t.equal(tts.backend, 'tones');
  t.equal(a.length, b.length);
  t.ok(
    a.some((v, i) => v !== b[i]),
    'the voice is heard',
  );
  const fresh = toneTts();
  const c = await fresh.synthesize('one two three', 'en-us', 16000);
  t.ok(
    c.every((v, i) => v === a[i]),
    'and stable',
  );
});

/** Lets queued playbacks finish (a stopped response gives its blocks back on a later turn of the event loop). */
/** A user turn of `samples` samples, all `value`, appended in 20 ms frames (at 16 kHz) and committed. */
function speakTurn(session: SpeechEngineSession, value: number, samples: number): void {
  for (let at = 0; at < samples; at += 320)
    session.appendAudio(new Int16Array(Math.min(320, samples - at)).fill(value));
  session.commitUserTurn();
}

const settle = async () => {
  for (let i = 0; i < 5; i++) await new Promise((r) => setImmediate(r));
};

t.test('a turn spoken while the previous one still plays back never gets its blocks: both play intact', async (t) => {
  const pool = audioBlockPool(16000);
  const inUseBefore = pool.stats().blocksInUse;
  const engine = createEchoEngine({ tts: toneTts(), voiceFor: () => 'en-us', log });
  const hooks = new Recorder();
  const session = await engine.open(sessionOptions(), hooks);
  const turnOf = (value: number, samples: number) => speakTurn(session, value, samples);
  turnOf(111, 5 * 16000);
  // The first turn is queued for playback (not a sample played yet): the next turn takes other blocks.
  t.equal(pool.stats().blocksInUse, inUseBefore + 5, "the first turn's 5 blocks are out, held by its playback");
  turnOf(-222, 5 * 16000);
  t.equal(pool.stats().blocksInUse, inUseBefore + 10, '5 more for the second: none of the first reused');
  await hooks.untilKind('done', 2);
  const [a, b] = hooks.events
    .filter((e) => e.kind === 'done')
    .map((e) => hooks.samplesOf((e as { responseId: string }).responseId));
  t.ok(a.length === 80_000 && a.every((v) => v === 111), 'first turn intact');
  t.ok(b.length === 80_000 && b.every((v) => v === -222), 'second turn intact');
  await settle();
  t.equal(pool.stats().blocksInUse, inUseBefore, "both turns' blocks back once played");
  await session.close();
});

t.test("sessions of one rate share the worker's pool and never hold one block at once", async (t) => {
  const pool = audioBlockPool(8000);
  const tts = toneTts();
  const engine = createEchoEngine({ tts, voiceFor: () => 'en-us', log });
  const recorders = [new Recorder(), new Recorder(), new Recorder()];
  const sessions = await Promise.all(recorders.map((r) => engine.open(sessionOptions({ clientSampleRate: 8000 }), r)));
  const inUseBefore = pool.stats().blocksInUse;
  // Frames of the three interleaved, each session its own value: 3.5 s each.
  for (let f = 0; f < 175; f++) sessions.forEach((s, i) => s.appendAudio(new Int16Array(160).fill(1000 * (i + 1))));
  t.equal(pool.stats().blocksInUse, inUseBefore + 12, 'four blocks each, from the one pool');
  sessions.forEach((s) => s.commitUserTurn());
  await Promise.all(recorders.map((r) => r.untilKind('done')));
  recorders.forEach((r, i) => {
    const id = (r.events.find((e) => e.kind === 'done') as { responseId: string }).responseId;
    const pcm = r.samplesOf(id);
    t.ok(pcm.length === 28_000 && pcm.every((v) => v === 1000 * (i + 1)), `session ${i + 1} plays its own audio only`);
  });
  await Promise.all(sessions.map((s) => s.close()));
});

t.test('a steady load of echo sessions carves no new slab after its first turns', async (t) => {
  const pool = audioBlockPool(8000);
  const tts = toneTts();
  const engine = createEchoEngine({ tts, voiceFor: () => 'en-us', log });
  const n = 20;
  const recorders = Array.from({ length: n }, () => new Recorder());
  const sessions = await Promise.all(recorders.map((r) => engine.open(sessionOptions({ clientSampleRate: 8000 }), r)));
  const carved: number[] = [];
  for (let turn = 0; turn < 5; turn++) {
    // 12 s turns: 240 blocks out at once over the 20 sessions, about two slabs.
    for (let f = 0; f < 600; f++) for (const s of sessions) s.appendAudio(new Int16Array(160).fill(turn + 1));
    for (const s of sessions) s.commitUserTurn();
    await Promise.all(recorders.map((r) => r.untilKind('done', turn + 1)));
    await settle();
    carved.push(pool.stats().slabsCarved);
  }
  t.ok(carved[0] >= 2, `the first turns carved the slabs they needed (${carved[0]})`);
  t.same(carved.slice(1), [carved[0], carved[0], carved[0], carved[0]], 'and later turns none');
  await Promise.all(sessions.map((s) => s.close()));
});

t.test('close gives every block back: the open turn at once, queued playbacks once they stop', async (t) => {
  const pool = audioBlockPool(16000);
  await settle();
  const inUseBefore = pool.stats().blocksInUse;
  const engine = createEchoEngine({ tts: toneTts(), voiceFor: () => 'en-us', log });
  const hooks = new Recorder();
  const session = await engine.open(sessionOptions(), hooks);
  const speak = (value: number, sec: number) => {
    for (let f = 0; f < sec * 50; f++) session.appendAudio(new Int16Array(320).fill(value));
  };
  speak(1, 3);
  session.commitUserTurn();
  speak(2, 4);
  session.commitUserTurn();
  speak(3, 2.5); // the open turn
  t.equal(pool.stats().blocksInUse, inUseBefore + 3 + 4 + 3);
  await session.close();
  t.equal(pool.stats().blocksInUse, inUseBefore + 7, "the open turn's blocks at once");
  await settle();
  t.equal(pool.stats().blocksInUse, inUseBefore, "the queued turns' once their playback stopped");
  t.notOk(
    hooks.events.some((e) => e.kind === 'done'),
    'nothing played after close',
  );
  session.appendAudio(new Int16Array(320));
  session.clearUserTurn();
  t.equal(pool.stats().blocksInUse, inUseBefore, 'a closed session takes nothing');
});
