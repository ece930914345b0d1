// A conversation under faults and hostile clients (src/conversation/conversation.ts, record.ts): a client that
// leaves while the start is under way leaves a finished record, never a held slot; a start whose record cannot be
// written tells the client a clean error; what a client can queue is bounded; a client that drops and never comes
// back ended when it left; a finish the store fails is made again, never abandoned.
import t from 'tap';
import { pino } from 'pino';
import { CLIENT_LIMITS } from '../../src/conversation/conversation.js';
import { ConversationRecord } from '../../src/conversation/record.js';
import type { ConversationStore } from '../../src/conversation/host.js';
import type { Finish, NewConversation, NewItem, NewRecording } from '../../src/store/conversations.js';
import { config, MemoryStore, setup, tickUntil } from './harness.js';

t.setTimeout(120_000);

/** A promise the test resolves when it wants: a store call held mid-flight. */
function gate(): { wait: Promise<void>; open(): void } {
  let open!: () => void;
  const wait = new Promise<void>((r) => (open = r));
  return { wait, open };
}

/** Event-loop turns until `cond` holds (the conversation's awaits in between). */
async function settle(cond: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 1000 && !cond(); i++) await new Promise((r) => setImmediate(r));
  if (!cond()) throw new Error(`never: ${what}`);
}

/** An error as main's client answers one (src/workers/main-client.ts MainRequestError: a status, a code). */
function storeError(status: number, message: string): Error {
  return Object.assign(new Error(message), { status });
}

t.test(
  'a client that leaves while admission is under way: the record is created and finished, the slot freed',
  async (t) => {
    const store = new MemoryStore();
    const admitting = gate();
    const admit = store.admit.bind(store);
    store.admit = async (...args) => {
      const out = await admit(...args);
      await admitting.wait;
      return out;
    };
    const s = setup({ store });
    const started = s.conv.start({ kind: 'config', config: config({ scripted_engine: {} }) });
    await settle(() => store.active.size === 1, 'admitted');
    s.conv.clientGone();
    admitting.open();
    await started;
    t.equal(await s.conv.ended, 'user');
    const rec = s.store.only();
    t.equal(rec.finish?.ended_by, 'user', 'the record made after admission is finished');
    t.equal(store.active.size, 0, 'and its slot freed with it');
    t.equal(s.client.count('conversation_created'), 0, 'the client that left is told nothing');
    t.equal(s.pacing.streams.size, 0, 'nothing left on the pacing clock');
  },
);

t.test('a client that leaves while the record is being created: it is finished as soon as it exists', async (t) => {
  const store = new MemoryStore();
  const creating = gate();
  const create = store.createConversation.bind(store);
  store.createConversation = async (c: NewConversation) => {
    await creating.wait;
    return create(c);
  };
  const s = setup({ store });
  const started = s.conv.start({ kind: 'config', config: config({ scripted_engine: {} }) });
  await settle(() => store.active.size === 1, 'admitted');
  s.conv.clientGone();
  creating.open();
  await started;
  await s.conv.ended;
  t.equal(s.store.only().finish?.ended_by, 'user');
  t.equal(store.active.size, 0);
  t.ok(s.store.only().conversation.started_at instanceof Date, 'the record says when it started');
});

t.test('a client that leaves as the conversation becomes ready: it does not stay on the pacing clock', async (t) => {
  const store = new MemoryStore();
  const ready = gate();
  const update = store.updateConversation.bind(store);
  store.updateConversation = async (id: string, patch: unknown) => {
    if ((patch as { state?: string }).state === 'ready') await ready.wait;
    return update(id, patch);
  };
  const s = setup({ store });
  const started = s.conv.start({ kind: 'config', config: config({ welcome_message: 'Hello.', scripted_engine: {} }) });
  await settle(() => s.client.count('conversation_created') === 1 && s.conv.state === 'ready', 'writing ready');
  s.conv.clientGone();
  await settle(() => s.conv.state === 'ending' || s.conv.state === 'ended', 'ending');
  ready.open();
  await started;
  await s.conv.ended;
  t.equal(s.pacing.streams.size, 0, 'not registered after its end');
  t.equal(s.store.only().finish?.ended_by, 'user');
});

t.test("a record that cannot be written: a clean error for the client, never the database's text", async (t) => {
  const store = new MemoryStore();
  store.createConversation = async () => {
    throw storeError(400, 'invalid byte sequence for encoding "UTF8": 0x00');
  };
  const s = setup({ store });
  await s.conv.start({ kind: 'config', config: config({ scripted_engine: {} }) });
  t.equal(await s.conv.ended, 'error');
  const [error] = s.client.events('error');
  t.equal(error.error.code, 'invalid_config');
  t.notMatch(error.error.message, /byte sequence|UTF8|0x00/, 'nothing of the database in the message');
  t.equal(s.client.closed?.code, 1008, 'closed as a policy violation');

  const down = new MemoryStore();
  down.createConversation = async () => {
    throw storeError(503, 'the database is unavailable');
  };
  const d = setup({ store: down });
  await d.conv.start({ kind: 'config', config: config({ scripted_engine: {} }) });
  t.equal(d.client.events('error')[0].error.code, 'database_unavailable');
  t.equal(d.client.closed?.code, 1013, 'try again later');
});

t.test('a creation that timed out may yet land: the finish ends such a row and frees the slot', async (t) => {
  const store = new MemoryStore();
  const create = store.createConversation.bind(store);
  store.createConversation = async (c: NewConversation) => {
    await create(c); // main wrote it, but its answer came too late
    throw storeError(504, 'main did not answer create_conversation within 10000 ms');
  };
  const s = setup({ store });
  await s.conv.start({ kind: 'config', config: config({ scripted_engine: {} }) });
  t.equal(await s.conv.ended, 'error');
  t.equal(s.client.events('error')[0].error.code, 'database_unavailable');
  t.equal(s.store.only().finish?.ended_by, 'error', 'the row that landed is finished');
  t.equal(store.active.size, 0, 'its slot freed');
});

t.test(
  'say and generate_reply: at most CLIENT_LIMITS.queued_replies queued; the newest beyond is dropped and told',
  async (t) => {
    const s = setup();
    await s.conv.start({ kind: 'config', config: config({ scripted_engine: {} }) });
    const extra = 5;
    for (let i = 0; i < CLIENT_LIMITS.queued_replies + extra; i++) s.conv.handle({ type: 'say', text: `Number ${i}.` });
    s.conv.handle({ type: 'generate_reply' });
    const refused = s.client.events('error').filter((e) => e.error.code === 'queue_full');
    t.equal(refused.length, extra + 1, 'each one over the bound is refused with queue_full');
    t.match(refused[0].error.message, String(CLIENT_LIMITS.queued_replies), 'naming the bound');
    // Speech stops at once when the conversation ends: what was never heard leaves no item.
    await s.conv.end('user');
    t.same(s.store.only().items, [], 'queued replies never heard are not on the record');
  },
);

t.test('add_system_message: a burst, then one per interval', async (t) => {
  const s = setup();
  await s.conv.start({ kind: 'config', config: config({ scripted_engine: {} }) });
  const burst = CLIENT_LIMITS.system_messages_burst;
  for (let i = 0; i < burst + 3; i++) s.conv.handle({ type: 'add_system_message', system_message: `note ${i}` });
  t.equal(s.client.events('error').filter((e) => e.error.code === 'queue_full').length, 3);
  s.timers.advance(CLIENT_LIMITS.system_message_interval_ms);
  s.conv.handle({ type: 'add_system_message', system_message: 'later' });
  t.equal(s.client.events('error').length, 3, 'one more after an interval');
  await s.conv.end('user');
});

t.test('audio chunks: at most 40 ms, whole 16-bit samples, not ahead of real time', async (t) => {
  const s = setup();
  await s.conv.start({ kind: 'config', config: config({ scripted_engine: {} }) });
  const bytesPerMs = (8000 * 2) / 1000; // pcm_8000
  const chunk = (ms: number, extra = 0) => Buffer.alloc(ms * bytesPerMs + extra).toString('base64');
  s.conv.handle({ type: 'audio_chunk', audio: chunk(60) });
  s.conv.handle({ type: 'audio_chunk', audio: chunk(20, 1) });
  const [tooLong, odd] = s.client.events('error');
  t.equal(tooLong.error.code, 'invalid_audio');
  t.match(tooLong.error.message, /at most 40 ms: 640 bytes/);
  t.equal(odd.error.code, 'invalid_audio');
  t.match(odd.error.message, /even number of bytes/);

  // The clock stands still: the credit of CLIENT_LIMITS.audio_ahead_ms goes, then chunks are dropped, told once.
  const ahead = CLIENT_LIMITS.audio_ahead_ms / 40;
  for (let i = 0; i < ahead + 10; i++) s.conv.handle({ type: 'audio_chunk', audio: chunk(40) });
  const late = s.client.events('error').filter((e) => e.error.code === 'audio_ahead_of_real_time');
  t.equal(late.length, 1, 'a run of chunks ahead of real time is told once');
  t.equal(s.client.events('error').length, 3);
  s.timers.advance(40);
  s.conv.handle({ type: 'audio_chunk', audio: chunk(40) });
  t.equal(s.client.events('error').length, 3, 'taken again as real time passes');
  await s.conv.end('user');
});

t.test('a client that drops and never comes back ended when it left, not when the grace ran out', async (t) => {
  const s = setup();
  await s.conv.start({ kind: 'config', config: config({ scripted_engine: {} }) });
  const startedAt = s.timers.now();
  s.timers.advance(5_000);
  const leftAt = s.timers.now();
  s.conv.clientDropped();
  s.timers.advance(30_000);
  s.conv.clientGone();
  await s.conv.ended;
  const finish = s.store.only().finish!;
  t.equal(finish.ended_by, 'user');
  t.equal(finish.ended_at.getTime(), leftAt, 'ended_at: when the client left');
  t.equal(finish.duration_ms, leftAt - startedAt, 'the grace is not counted');

  const back = setup();
  await back.conv.start({ kind: 'config', config: config({ scripted_engine: {} }) });
  const start = back.timers.now();
  back.conv.clientDropped();
  back.timers.advance(2_000);
  back.conv.clientReturned();
  back.timers.advance(3_000);
  await back.conv.end('user');
  t.equal(
    back.store.only().finish!.duration_ms,
    back.timers.now() - start,
    'a client that came back: its whole time counts',
  );
});

t.test(
  'ended from outside with a close code: the socket gets it (a shutdown closes with 1012 restarting)',
  async (t) => {
    const s = setup();
    await s.conv.start({ kind: 'config', config: config({ welcome_message: 'Hello.', scripted_engine: {} }) });
    await tickUntil(s, () => s.client.count('assistant_started_speaking') === 1, 'the welcome');
    await s.conv.end('error', { code: 1012, reason: 'restarting' });
    t.same(s.client.closed, { code: 1012, reason: 'restarting' });
    t.equal(s.store.only().finish?.ended_by, 'error');
  },
);

/** A record's store whose finishes fail as told, then land. */
class FlakyFinishes extends MemoryStore {
  failures: Error[] = [];
  attempts: Finish[] = [];
  override async finishConversation(id: string, finish: Finish, recordings: NewRecording[]) {
    this.attempts.push(finish);
    const err = this.failures.shift();
    if (err) throw err;
    return super.finishConversation(id, finish, recordings);
  }
}

const log = pino({ level: 'silent' });

async function boundRecord(store: MemoryStore): Promise<ConversationRecord> {
  await store.createConversation({ id: 'conv_1', orgId: 'org', projectId: 'proj', origin: 'web' });
  const record = new ConversationRecord(store as ConversationStore, log, { finishRetry: { min_ms: 1, max_ms: 4 } });
  record.bind('conv_1');
  return record;
}

t.test('a finish the database cannot take now is tried again in the background until it lands', async (t) => {
  const store = new FlakyFinishes();
  store.failures = [
    storeError(503, 'unavailable'),
    storeError(504, 'main did not answer'),
    storeError(503, 'unavailable'),
  ];
  const record = await boundRecord(store);
  await record.finish('user', 1_000, 61_000);
  t.ok(record.retrying, 'not abandoned: retrying');
  // The retry's timer is unref'd (a stopping worker is not held up by it): something must keep this process alive.
  const alive = setInterval(() => {}, 1_000);
  await record.retrying;
  clearInterval(alive);
  t.equal(store.attempts.length, 4, 'three failures, then the finish that landed');
  t.match(store.only().finish, { ended_by: 'user', duration_ms: 60_000 });
});

t.test(
  'a finish refused for what it holds is made again without the transcript; an item, without its text',
  async (t) => {
    const store = new FlakyFinishes();
    const appended: NewItem[][] = [];
    let refuseText = true;
    store.appendItems = async (id: string, items: NewItem[]) => {
      if (refuseText && items.some((i) => i.live_transcript)) throw storeError(400, 'a value could not be stored');
      appended.push(items);
      return { itemIds: items.map((i) => i.id!) };
    };
    store.failures = [storeError(400, 'a value could not be stored')];
    const record = await boundRecord(store);
    record.holdUserItem({
      role: 'user',
      live_transcript: 'bad \u0000 text',
      duration_ms: 500,
      started_at: new Date(0),
    });
    record.flushUserItem();
    await record.finish('user', 1_000, 2_000);
    refuseText = false;
    t.equal(appended.length, 1, 'the item is stored');
    t.equal(appended[0][0].live_transcript, null, 'without its text');
    t.ok(appended[0][0].id, 'with the id it was given (a resend is not stored twice)');
    t.equal(store.attempts.length, 2);
    t.match(store.attempts[0], { live_transcript: 'user: bad \u0000 text' }, 'the full finish first');
    t.equal(store.attempts[1].live_transcript, null, 'then without the transcript');
    t.match(store.only().finish, { ended_by: 'user', duration_ms: 1_000 }, 'the record is finished');
    t.equal(record.retrying, null, 'nothing left to retry');
  },
);
