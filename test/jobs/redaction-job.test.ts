// The `redact` job on a real database and real files: the record's and items' redacted transcripts, is_redacted,
// the unredacted transcripts dropped, the recording bleeped (whole turns without word timings, the words' times with
// them) into a new file the row moves to; the chat model's names and addresses (a fake OpenAI-compatible server),
// its failures; the skips; a recording that moves meanwhile.
import { readFileSync, writeFileSync, existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import t from 'tap';
import { createChatClient, ChatUpstreamUnavailableError } from '../../src/engines/chat-client.js';
import { RECORDINGS_DIR } from '../../src/media/recording.js';
import { addRecording, createConversation, getConversation, type NewItem } from '../../src/store/conversations.js';
import { postCallWords, savePostCallTranscript } from '../../src/store/post-call.js';
import { redactionHandler, sqlRedactionStore, type RedactionStore } from '../../src/jobs/redaction/handler.js';
import { BLEEP_LEVEL_DBFS } from '../../src/jobs/redaction/bleep.js';
import { writeWavHeader } from '../../src/jobs/external-storage/wav-multipart-sink.js';
import { startFakeChatServer } from '../fakes/chat-server.js';
import { DB_KINDS, startTestServer, type TestServer } from '../helpers/server.js';
import { jobContext } from './delivery-helpers.js';

t.setTimeout(300_000);

const RATE = 8000;
const SECONDS = 12;
const AMPLITUDE = Math.round(32767 * 10 ** (BLEEP_LEVEL_DBFS / 20));
const T0 = new Date('2026-11-20T10:00:00Z');
const at = (ms: number) => new Date(T0.getTime() + ms);

/** A stereo WAV where no sample reaches the tone's level: left 1000 + f % 100, right -1000 - f % 100. */
function recording(): Buffer {
  const frames = RATE * SECONDS;
  const b = Buffer.alloc(44 + frames * 4);
  writeWavHeader(b, RATE, 2, frames * 4);
  for (let f = 0; f < frames; f++) {
    b.writeInt16LE(1000 + (f % 100), 44 + f * 4);
    b.writeInt16LE(-1000 - (f % 100), 44 + f * 4 + 2);
  }
  return b;
}

/** Whether channel `c` holds the tone around `ms` (a sample at its peak: far from the original's values). */
function bleepedAt(wav: Buffer, ms: number, c: 0 | 1): boolean {
  const f0 = Math.round((ms * RATE) / 1000);
  let peak = 0;
  for (let f = f0; f < f0 + RATE / 100; f++) peak = Math.max(peak, Math.abs(wav.readInt16LE(44 + (f * 2 + c) * 2)));
  return Math.abs(peak - AMPLITUDE) <= 2;
}

const item = (role: 'user' | 'assistant', text: string, startMs: number, durationMs: number): NewItem => ({
  role,
  live_transcript: text,
  duration_ms: durationMs,
  started_at: at(startMs),
});

async function conversation(
  server: TestServer,
  items: NewItem[],
  opts: { redaction?: boolean; compressTo?: boolean; endedAfterMs?: number } = {},
) {
  const id = await createConversation(server.sql, {
    orgId: server.orgId,
    projectId: server.projectId,
    origin: 'direct',
    started_at: T0,
    settings: { enable_redaction: opts.redaction ?? true },
    items,
    finish: {
      ended_by: 'user',
      ended_at: at(opts.endedAfterMs ?? SECONDS * 1000),
      live_transcript: items.map((i) => `${i.role}: ${i.live_transcript}`).join('\n'),
    },
  });
  const dir = join(server.settings.PARLEY_DATA_DIR, RECORDINGS_DIR);
  mkdirSync(dir, { recursive: true });
  const wav = recording();
  writeFileSync(join(dir, `${id}.wav`), wav);
  await addRecording(server.sql, id, {
    side: 'both',
    path: `${id}.wav`,
    format: 'wav',
    sample_rate: RATE,
    channels: 2,
    bytes: wav.length,
    compress_to: opts.compressTo ? 'wav.gz' : null,
  });
  return { id, dir };
}

for (const db of DB_KINDS) {
  t.test(`the redact job on ${db}`, async (t) => {
    const server = await startTestServer({ db });
    t.teardown(() => server.close());
    const chat = await startFakeChatServer();
    t.teardown(() => chat.close());
    const offline = redactionHandler({ chat: () => null });
    const ctx = jobContext(server.sql, server.settings);

    t.test('offline: transcripts redacted and dropped, whole turns bleeped into a new file', async (t) => {
      const { id, dir } = await conversation(server, [
        item(
          'user',
          'Hi, my name is John Smith, my number is five five five, one two three, four five six seven.',
          1000,
          4000,
        ),
        item('assistant', 'Thanks, John. I have your email as john at example dot com.', 5500, 3000),
        item('user', 'Great, thank you.', 9000, 1500),
      ]);
      const outcome = await offline.run(offline.parse({ conversation_id: id }), ctx);
      t.match(outcome, {
        status: 'done',
        detail: {
          spans: { NAME: 2, PHONE: 1, EMAIL: 1 },
          audio_spans: 2,
          word_timings: /none/,
          model: { status: 'skipped', reason: /model-assisted redaction skipped: no chat model configured/ },
        },
      });
      const conv = (await getConversation(server.sql, id))!.record as unknown as Record<string, unknown> & {
        items: Record<string, unknown>[];
      };
      t.equal(conv.is_redacted, true);
      t.equal(
        conv.redacted_transcript,
        'user: Hi, my name is [NAME], my number is [PHONE].\nassistant: Thanks, [NAME]. I have your email as [EMAIL].\nuser: Great, thank you.',
      );
      t.equal(conv.live_transcript, null, 'the unredacted transcript is dropped');
      t.same(
        conv.items.map((i) => [i.live_transcript, i.redacted_transcript]),
        [
          [null, 'Hi, my name is [NAME], my number is [PHONE].'],
          [null, 'Thanks, [NAME]. I have your email as [EMAIL].'],
          [null, 'Great, thank you.'],
        ],
        'items: live_transcript null when redacted, the redacted text beside it',
      );
      t.notOk(JSON.stringify(conv).includes('Smith'), 'no unredacted text anywhere in the record');

      const [row] = await server.sql<
        { path: string; format: string; bytes: number }[]
      >`select path, format, bytes::float8 as bytes from conversation_recordings where conversation_id = ${id}`;
      t.match(row, { path: `${id}.redacted.wav`, format: 'wav' });
      t.notOk(existsSync(join(dir, `${id}.wav`)), 'the unbleeped file is removed');
      const wav = readFileSync(join(dir, `${id}.redacted.wav`));
      t.equal(wav.length, row!.bytes);
      t.ok(
        bleepedAt(wav, 1500, 0) && bleepedAt(wav, 4500, 0),
        "the first user turn is bleeped on the user's channel (no word timings: the whole turn)",
      );
      t.notOk(bleepedAt(wav, 1500, 1), "the assistant's channel meanwhile is not");
      t.ok(bleepedAt(wav, 6000, 1) && !bleepedAt(wav, 6000, 0), "the assistant's turn on the assistant's channel");
      t.notOk(bleepedAt(wav, 9500, 0), 'a turn without PII is not bleeped');
      t.notOk(bleepedAt(wav, 500, 0), 'nor the time before the first turn');

      t.match(await offline.run({ conversation_id: id }, ctx), { status: 'skipped', reason: /redacted already/ });
    });

    t.test(
      "with the post-call transcript's word timings only the words of a span are bleeped; a pending gzip is made on the way",
      async (t) => {
        const text = 'Yes, my number is five five five, one two one two.';
        const { id, dir } = await conversation(
          server,
          [{ ...item('user', text, 2000, 6000), post_call_transcript: text }],
          { compressTo: true },
        );
        const [{ id: itemId }] = await server.sql<
          { id: string }[]
        >`select id from conversation_items where conversation_id = ${id}`;
        // As the post-call transcript stores them (src/store/post-call.ts): ms from the recording's start, per item.
        const words = (
          [
            ['Yes,', 2.0, 2.3],
            ['my', 2.4, 2.6],
            ['number', 2.6, 3.0],
            ['is', 3.0, 3.2],
            ['five', 3.4, 3.7],
            ['five', 3.7, 4.0],
            ['five,', 4.0, 4.3],
            ['one', 4.5, 4.8],
            ['two', 4.8, 5.1],
            ['one', 5.1, 5.4],
            ['two.', 5.4, 5.8],
          ] as const
        ).map(([word, s, e]) => ({
          role: 'user' as const,
          word,
          start_ms: s * 1000,
          end_ms: e * 1000,
          item_id: itemId!,
        }));
        t.equal(
          await savePostCallTranscript(server.sql, id, {
            text: `user: ${text}`,
            items: [{ id: itemId!, text }],
            words,
          }),
          'saved',
        );
        t.match(await offline.run({ conversation_id: id }, ctx), {
          status: 'done',
          detail: { word_timings: 'used', audio_spans: 1 },
        });
        const [row] = await server.sql<
          { path: string; format: string; compress_to: string | null }[]
        >`select path, format, compress_to from conversation_recordings where conversation_id = ${id}`;
        t.same(
          row,
          { path: `${id}.redacted.wav.gz`, format: 'wav.gz', compress_to: null },
          'written as the wav.gz it was waiting to become',
        );
        const wav = gunzipSync(readFileSync(join(dir, `${id}.redacted.wav.gz`)));
        t.notOk(bleepedAt(wav, 2500, 0), '"my number is" is not bleeped');
        t.ok(bleepedAt(wav, 3500, 0) && bleepedAt(wav, 5600, 0), 'the digits are');
        t.notOk(bleepedAt(wav, 6500, 0), 'nor what follows them in the turn');
        const [i] =
          await server.sql`select live_transcript, post_call_transcript, redacted_transcript from conversation_items where conversation_id = ${id}`;
        t.same(i, {
          live_transcript: null,
          post_call_transcript: null,
          redacted_transcript: 'Yes, my number is [PHONE].',
        });
        t.equal(
          await postCallWords(server.sql, id),
          null,
          "the post-call transcript's words, unredacted text, are dropped",
        );
      },
    );

    t.test('turns are placed in the recording from its end: it starts after the conversation did', async (t) => {
      // The conversation ran 15 s, its recording 12 s: the recording began 3 s after started_at.
      const { id, dir } = await conversation(server, [item('user', 'My SSN is 123-45-6789.', 5000, 2000)], {
        endedAfterMs: 15_000,
      });
      t.match(await offline.run({ conversation_id: id }, ctx), { status: 'done' });
      const wav = readFileSync(join(dir, `${id}.redacted.wav`));
      t.ok(
        bleepedAt(wav, 2500, 0) && bleepedAt(wav, 3500, 0),
        'the turn, 5 s after the start, is 2 s into the recording',
      );
      t.notOk(bleepedAt(wav, 4500, 0), 'and not where started_at alone would put it');
    });

    t.test('the chat model adds names and addresses the rules cannot see', async (t) => {
      const { id } = await conversation(server, [
        item('user', 'I talked to Kevin yesterday about it.', 1000, 2000),
        item('user', 'She lives on Birch Road near the school.', 4000, 2000),
      ]);
      chat.script({
        reply: {
          content: JSON.stringify({
            entities: [
              { line: 1, text: 'Kevin', type: 'NAME' },
              { line: 2, text: 'Birch Road', type: 'ADDRESS' },
              { line: 1, text: 'Nobody', type: 'NAME' },
            ],
          }),
        },
      });
      const withModel = redactionHandler({
        chat: () => createChatClient({ baseUrl: chat.baseUrl, model: 'redactor', maxRetries: 0 }),
      });
      const before = chat.requests.length;
      t.match(await withModel.run({ conversation_id: id }, ctx), {
        status: 'done',
        detail: { spans: { NAME: 1, ADDRESS: 1 }, model: { status: 'used', notFound: 1 } },
      });
      const req = chat.requests[before]!;
      t.match(req.body, { model: 'redactor', response_format: { type: 'json_schema' } });
      t.match(req.body.messages[1]!.content, /1: I talked to Kevin yesterday about it\.\n2: She lives on Birch Road/);
      const [c] = await server.sql`select redacted_transcript from conversations where id = ${id}`;
      t.equal(
        c!.redacted_transcript,
        'user: I talked to [NAME] yesterday about it.\nuser: She lives on [ADDRESS] near the school.',
      );
    });

    t.test(
      'a model that does not answer fails the job (retried); an unusable answer leaves the rules to it',
      async (t) => {
        const { id } = await conversation(server, [
          item('user', 'My number is 415-555-0132, Kevin knows it.', 1000, 2000),
        ]);
        const withModel = redactionHandler({
          chat: () => createChatClient({ baseUrl: chat.baseUrl, model: 'redactor', maxRetries: 0 }),
        });
        chat.script({ status: 503, body: { error: 'overloaded' } });
        await t.rejects(withModel.run({ conversation_id: id }, ctx), ChatUpstreamUnavailableError);
        const [before] = await server.sql`select is_redacted, live_transcript from conversations where id = ${id}`;
        t.match(before, { is_redacted: false, live_transcript: /415-555-0132/ }, 'nothing saved');
        chat.script({ reply: { content: 'Sure! Kevin is a name.' } });
        t.match(await withModel.run({ conversation_id: id }, ctx), {
          status: 'done',
          detail: { spans: { PHONE: 1 }, model: { status: 'failed', reason: /did not answer with the entities/ } },
        });
        const [after] = await server.sql`select redacted_transcript from conversations where id = ${id}`;
        t.equal(after!.redacted_transcript, 'user: My number is [PHONE], Kevin knows it.');
      },
    );

    t.test('skips: not enabled, zero data retention, gone; a conversation still running is retried', async (t) => {
      const off = await conversation(server, [item('user', 'Call 415-555-0132.', 1000, 1000)], { redaction: false });
      t.match(await offline.run({ conversation_id: off.id }, ctx), { status: 'skipped', reason: /not enabled/ });
      const zdr = await createConversation(server.sql, {
        orgId: server.orgId,
        projectId: server.projectId,
        origin: 'direct',
        settings: { enable_redaction: true, data_retention_policy: { zero_data_retention: true } },
        finish: { ended_by: 'user', ended_at: T0 },
      });
      t.match(await offline.run({ conversation_id: zdr }, ctx), { status: 'skipped', reason: /zero data retention/ });
      t.match(await offline.run({ conversation_id: 'conv_nope' }, ctx), {
        status: 'skipped',
        reason: /does not exist/,
      });
      const live = await createConversation(server.sql, {
        orgId: server.orgId,
        projectId: server.projectId,
        origin: 'direct',
        state: 'active',
        settings: { enable_redaction: true },
      });
      await t.rejects(offline.run({ conversation_id: live }, ctx), /not ended yet/);
      t.throws(() => offline.parse({ conversation: 'x' }));
    });

    t.test(
      'a recording row that moves while it is bleeped: nothing saved, the new file removed, retried',
      async (t) => {
        const { id, dir } = await conversation(server, [item('user', 'My SSN is 123-45-6789.', 1000, 2000)]);
        const real = sqlRedactionStore(server.sql);
        let race = true;
        const racing: RedactionStore = {
          load: real.load,
          async save(r) {
            // The compressor (or a deletion) got there first.
            if (race)
              await server.sql`update conversation_recordings set path = ${`${id}.wav.gz`}, format = 'wav.gz' where conversation_id = ${id}`;
            race = false;
            return real.save(r);
          },
        };
        const handler = redactionHandler({ chat: () => null, store: () => racing });
        await t.rejects(handler.run({ conversation_id: id }, ctx), /changed while it was bleeped/);
        t.notOk(existsSync(join(dir, `${id}.redacted.wav`)), 'the bleeped file is removed');
        const [c] = await server.sql`select is_redacted from conversations where id = ${id}`;
        t.equal(c!.is_redacted, false, 'nothing saved');
        await server.sql`update conversation_recordings set path = ${`${id}.wav`}, format = 'wav' where conversation_id = ${id}`;
        t.match(await handler.run({ conversation_id: id }, ctx), { status: 'done' }, 'the retry redacts');
      },
    );
  });
}
