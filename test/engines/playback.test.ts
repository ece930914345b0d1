// Playback (src/engines/playback.ts) on its own: the order of a response's events (text, 100 ms audio chunks,
// done), responses one after the other, a cancel that stops a response mid-way, the finished callback exactly
// once, and the pacing: nothing inside the call that queued it, the first chunk in the same turn of the event loop
// as that call, each later chunk one turn of the event loop after the one before.
import t from 'tap';
import { PLAYBACK_CHUNK_MS, Playback } from '../../src/engines/playback.js';
import { Recorder } from './recorder.js';

const RATE = 8000;
const CHUNK = (RATE * PLAYBACK_CHUNK_MS) / 1000;
const ramp = (n: number, from = 0) => Int16Array.from({ length: n }, (_, i) => from + i);
const turn = () => new Promise<void>((r) => setImmediate(r));

t.test('text, then the audio in 100 ms chunks in order, then done; the next response only after', async (t) => {
  const hooks = new Recorder();
  const p = new Playback('x', RATE, hooks);
  const pcm = ramp(2 * CHUNK + 17);
  const a = p.newId();
  const b = p.newId();
  t.not(a, b, 'ids are distinct');
  let finishedA = 0;
  p.play(
    a,
    async () => [
      { kind: 'text', text: 'hi' },
      { kind: 'audio', pcm },
    ],
    (err) => void t.fail(String(err)),
    true,
    () => finishedA++,
  );
  p.play(
    b,
    async () => [{ kind: 'audio', pcm: ramp(CHUNK, 5) }],
    (err) => void t.fail(String(err)),
  );
  t.same(hooks.events, [], 'nothing inside the call that queued it');
  await p.idle();
  await turn();
  t.same(hooks.events, [
    { kind: 'text', responseId: a, delta: 'hi' },
    { kind: 'audio', responseId: a, samples: CHUNK },
    { kind: 'audio', responseId: a, samples: CHUNK },
    { kind: 'audio', responseId: a, samples: 17 },
    { kind: 'done', responseId: a },
    { kind: 'audio', responseId: b, samples: CHUNK },
    { kind: 'done', responseId: b },
  ]);
  t.same(hooks.samplesOf(a), pcm, 'the audio sample for sample');
  t.equal(finishedA, 1, 'finished once');
});

t.test(
  'the text and the first chunk come in the turn of the event loop that queued the response, the rest later',
  async (t) => {
    const hooks = new Recorder();
    const p = new Playback('x', RATE, hooks);
    const id = p.newId();
    p.play(
      id,
      async () => [
        { kind: 'text', text: 'hi' },
        { kind: 'audio', pcm: ramp(3 * CHUNK) },
      ],
      (err) => void t.fail(String(err)),
    );
    t.same(hooks.events, [], 'nothing inside the call that queued it');
    // An immediate queued now runs before anything the response would put off to a later turn (no I/O in between
    // here; in a worker, every other socket's pending messages).
    await turn();
    t.same(
      hooks.events,
      [
        { kind: 'text', responseId: id, delta: 'hi' },
        { kind: 'audio', responseId: id, samples: CHUNK },
      ],
      'the text and the first chunk, before the turn ended; nothing more yet',
    );
    await p.idle();
    t.equal(hooks.events.filter((e) => e.kind === 'audio').length, 3, 'the other two chunks later');
  },
);

t.test('one chunk per turn of the event loop: an engine never hands the whole response in one go', async (t) => {
  const hooks = new Recorder();
  const p = new Playback('x', RATE, hooks);
  const id = p.newId();
  p.play(
    id,
    async () => [{ kind: 'audio', pcm: ramp(10 * CHUNK) }],
    (err) => void t.fail(String(err)),
    false,
  );
  const perTurn: number[] = [];
  for (let i = 0; i < 30 && perTurn.reduce((s, n) => s + n, 0) < 10; i++) {
    const before = hooks.events.length;
    await turn();
    perTurn.push(hooks.events.length - before);
  }
  t.equal(hooks.events.length, 10, 'ten chunks, no done (done = false)');
  t.ok(
    perTurn.every((n) => n <= 1),
    `at most one chunk per turn (${perTurn.join(',')})`,
  );
  await p.idle();
  await turn();
  t.equal(hooks.events.filter((e) => e.kind === 'done').length, 0, 'no done when not asked for');
});

t.test(
  'a cancel mid-way stops the audio at once and says nothing more; finished still runs once; the next plays',
  async (t) => {
    const hooks = new Recorder();
    const p = new Playback('x', RATE, hooks);
    const a = p.newId();
    const b = p.newId();
    let finished = 0;
    hooks.onEvent = (e) => {
      if (e.kind === 'audio' && e.responseId === a && hooks.audio.get(a)!.length === 3) p.cancel(a);
    };
    p.play(
      a,
      async () => [
        { kind: 'audio', pcm: ramp(10 * CHUNK) },
        { kind: 'text', text: 'never' },
      ],
      (err) => void t.fail(String(err)),
      true,
      () => finished++,
    );
    p.play(
      b,
      async () => [{ kind: 'text', text: 'next' }],
      (err) => void t.fail(String(err)),
      true,
      () => finished++,
    );
    await p.idle();
    await turn();
    t.same(
      hooks.events.filter((e) => 'responseId' in e && e.responseId === a).map((e) => e.kind),
      ['audio', 'audio', 'audio'],
      'three chunks, then nothing (no text, no done)',
    );
    t.same(hooks.events.slice(-2), [
      { kind: 'text', responseId: b, delta: 'next' },
      { kind: 'done', responseId: b },
    ]);
    t.equal(finished, 2, 'each finished exactly once');
    p.cancel(a);
    p.cancel('x_99');
    await turn();
    t.equal(finished, 2, 'a late cancel changes nothing');
  },
);

t.test(
  'a response canceled before it starts says nothing; a failing one is reported once and the queue goes on',
  async (t) => {
    const hooks = new Recorder();
    const p = new Playback('x', RATE, hooks);
    const a = p.newId();
    const b = p.newId();
    const c = p.newId();
    const failures: unknown[] = [];
    let finished = 0;
    p.play(
      a,
      async () => [{ kind: 'text', text: 'never' }],
      (err) => void t.fail(String(err)),
      true,
      () => finished++,
    );
    p.play(
      b,
      async () => Promise.reject(new Error('tts broke')),
      (err) => failures.push(err),
      true,
      () => finished++,
    );
    let ran = 0;
    p.play(
      c,
      async () => [{ kind: 'call', run: () => ran++ }],
      (err) => void t.fail(String(err)),
      true,
      () => finished++,
    );
    p.cancel(a);
    await p.idle();
    await turn();
    t.same(hooks.events, [{ kind: 'done', responseId: c }]);
    t.equal(failures.length, 1);
    t.equal((failures[0] as Error).message, 'tts broke');
    t.equal(ran, 1, 'the call step ran');
    t.equal(finished, 3, 'finished once each');
  },
);

t.test('close stops what plays and what is queued', async (t) => {
  const hooks = new Recorder();
  const p = new Playback('x', RATE, hooks);
  const a = p.newId();
  let finished = 0;
  hooks.onEvent = (e) => {
    if (e.kind === 'audio') p.close();
  };
  p.play(
    a,
    async () => [{ kind: 'audio', pcm: ramp(5 * CHUNK) }],
    (err) => void t.fail(String(err)),
    true,
    () => finished++,
  );
  p.play(
    p.newId(),
    async () => [{ kind: 'text', text: 'never' }],
    (err) => void t.fail(String(err)),
    true,
    () => finished++,
  );
  await p.idle();
  await turn();
  t.same(
    hooks.events.map((e) => e.kind),
    ['audio'],
  );
  t.equal(finished, 2);
});

t.test(
  'a hook that throws is reported once to that response, which stops; finished runs once and the queue goes on',
  async (t) => {
    const hooks = new Recorder();
    const p = new Playback('x', RATE, hooks);
    const a = p.newId();
    const b = p.newId();
    const failures: unknown[] = [];
    let finished = 0;
    hooks.onEvent = (e) => {
      if (e.kind === 'text' && e.responseId === a) throw new Error('hook broke');
    };
    p.play(
      a,
      async () => [
        { kind: 'text', text: 'boom' },
        { kind: 'audio', pcm: ramp(CHUNK) },
      ],
      (err) => failures.push(err),
      true,
      () => finished++,
    );
    p.play(
      b,
      async () => [{ kind: 'text', text: 'next' }],
      (err) => void t.fail(String(err)),
      true,
      () => finished++,
    );
    await p.idle();
    await turn();
    t.same(
      hooks.events.map((e) => ('responseId' in e ? `${e.kind}:${e.responseId}` : e.kind)),
      [`text:${a}`, `text:${b}`, `done:${b}`],
      'a stops at the throw (no audio, no done); b plays',
    );
    t.equal(failures.length, 1);
    t.equal((failures[0] as Error).message, 'hook broke');
    t.equal(finished, 2, 'finished once each');
  },
);
