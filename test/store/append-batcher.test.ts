// Coalesced item appends (src/store/append-batcher.ts): appends of many conversations share one statement, each
// caller still gets its own ids or its own error, appends to one conversation keep their order, a failing append
// takes no other down with it, an append lost with its connection is held and sent again (never written twice).
// Runs on both databases.
import t from 'tap';
import { DB_KINDS, startTestServer } from '../helpers/server.js';
import { createLogger } from '../../src/log.js';
import { AppendBatcher } from '../../src/store/append-batcher.js';
import {
  appendItemsBatch,
  ConversationNotFoundError,
  createConversation,
  getConversation,
  type NewItem,
} from '../../src/store/conversations.js';

t.setTimeout(300_000);
const log = createLogger('silent');
/** Long enough that appends made in one tick always meet in one batch, however loaded the machine. */
const WINDOW_MS = 20;

const turn = (text: string, extra: Partial<NewItem> = {}): NewItem => ({
  role: 'user',
  live_transcript: text,
  duration_ms: 10,
  started_at: new Date(),
  ...extra,
});

t.test(
  'a batch lost with its connection is held and sent again, the same items, until it lands or its bound passes',
  async (t) => {
    const lost = Object.assign(new Error('write CONNECTION_CLOSED 127.0.0.1:5432'), { code: 'CONNECTION_CLOSED' });
    const sent: string[][] = [];
    let failures = 3;
    // Just enough of postgres.js's sql for appendItemsBatch: like postgres.js, a call makes a query that runs only when
    // awaited (a fragment interpolated into another query never is); the statement fails the way a dropped connection
    // does `failures` times, then answers as if both conversations took their items.
    const sql = Object.assign(
      () => ({
        then(resolve: (v: never) => unknown, reject: (e: unknown) => unknown) {
          if (failures-- > 0) return Promise.reject(lost).then(resolve, reject);
          return Promise.resolve([{ conversation_id: 'conv_a' }, { conversation_id: 'conv_b' }] as never).then(
            resolve,
            reject,
          );
        },
      }),
      {
        json: (v: unknown) => {
          // The items' rows travel as the first jsonb array: what each attempt carried, by id.
          if (Array.isArray(v) && v.length > 0 && (v[0] as { role?: string }).role)
            sent.push(v.map((r) => (r as { id: string }).id));
          return v;
        },
      },
    );
    const hold = { max_hold_ms: 60_000, max_held_items: 100, retry_min_ms: 1, retry_max_ms: 4 };
    const batcher = new AppendBatcher(sql as never, log, { window_ms: WINDOW_MS, max_items: 500 }, hold);
    const [a, b] = await Promise.all([batcher.append('conv_a', [turn('a')]), batcher.append('conv_b', [turn('b')])]);
    t.equal(sent.length, 4, 'three lost attempts, then the one that landed');
    t.ok(
      sent.every((ids) => ids.join() === sent[0].join()),
      'every attempt carried the same item ids (a resend is never written twice)',
    );
    t.same([...a, ...b], sent[0], 'each caller gets the ids its items were sent with');
    t.equal(batcher.stats.heldBatches, 3);

    // Past the bound: held no longer than max_hold_ms, then the caller learns it was not stored.
    failures = Number.POSITIVE_INFINITY;
    const brief = new AppendBatcher(
      sql as never,
      log,
      { window_ms: WINDOW_MS, max_items: 500 },
      { ...hold, max_hold_ms: 30 },
    );
    const outcome = await Promise.allSettled([brief.append('conv_a', [turn('late')])]);
    t.equal(
      outcome[0].status === 'rejected' && outcome[0].reason,
      lost,
      'past max_hold_ms the append fails with the database error',
    );
    t.ok(brief.stats.heldBatches >= 1, 'it was held before it failed');

    // While appends are held, no more than max_held_items wait: one beyond them fails at once.
    const small = new AppendBatcher(
      sql as never,
      log,
      { window_ms: WINDOW_MS, max_items: 500 },
      { ...hold, max_held_items: 2 },
    );
    const held = small.append('conv_a', [turn('1'), turn('2')]).catch((err: unknown) => err);
    await new Promise((r) => setTimeout(r, WINDOW_MS * 3));
    await t.rejects(
      small.append('conv_b', [turn('3')]),
      lost,
      'over the bound while the database is unavailable: refused at once',
    );
    failures = 0;
    t.same(await held, sent[sent.length - 1], 'the held one lands once the database answers');
  },
);

for (const db of DB_KINDS) {
  t.test(`append batcher on ${db}`, { timeout: 180_000 }, async (t) => {
    const server = await startTestServer({ db });
    t.teardown(() => server.close());
    const { sql, orgId, projectId } = server;
    const conversation = () => createConversation(sql, { orgId, projectId, origin: 'web' });
    const texts = async (id: string) =>
      (await getConversation(sql, id))!.record.items.map((i) => [i.item_idx, i.live_transcript]);

    t.test('appends of many conversations share one statement; each gets its own ids', async (t) => {
      const batcher = new AppendBatcher(sql, log, { window_ms: WINDOW_MS, max_items: 500 });
      const ids = await Promise.all([conversation(), conversation(), conversation()]);
      const got = await Promise.all(ids.map((id, c) => batcher.append(id, [turn(`${c}a`), turn(`${c}b`)])));
      t.same(batcher.stats, { statements: 1, appends: 3, retriedBatches: 0, heldBatches: 0 });
      for (const [c, id] of ids.entries()) {
        t.same(await texts(id), [
          [0, `${c}a`],
          [1, `${c}b`],
        ]);
        t.same(
          (await getConversation(sql, id))!.record.items.map((i) => i.id),
          got[c],
          `conversation ${c}: its ids`,
        );
      }
    });

    t.test('appends to one conversation in one batch, and in the next, keep their order', async (t) => {
      const batcher = new AppendBatcher(sql, log, { window_ms: WINDOW_MS, max_items: 500 });
      const id = await conversation();
      const first = [batcher.append(id, [turn('1'), turn('2')]), batcher.append(id, [turn('3')])];
      // After the first batch has left: these go together in the next.
      await new Promise((r) => setTimeout(r, WINDOW_MS * 1.5));
      const next = [batcher.append(id, [turn('4')]), batcher.append(id, [turn('5'), turn('6')])];
      await Promise.all([...first, ...next]);
      t.same(await texts(id), [
        [0, '1'],
        [1, '2'],
        [2, '3'],
        [3, '4'],
        [4, '5'],
        [5, '6'],
      ]);
      t.equal(batcher.stats.statements, 2);
    });

    t.test('a failing append rejects alone; the rest of its batch lands', async (t) => {
      const batcher = new AppendBatcher(sql, log, { window_ms: WINDOW_MS, max_items: 500 });
      const [a, b] = await Promise.all([conversation(), conversation()]);
      const outcomes = await Promise.allSettled([
        batcher.append(a, [turn('a1')]),
        batcher.append(b, [turn('bad', { role: 'system' as NewItem['role'] })]),
        batcher.append(a, [turn('a2')]),
        batcher.append(b, [turn('b ok')]),
      ]);
      t.same(
        outcomes.map((o) => o.status),
        ['fulfilled', 'rejected', 'fulfilled', 'fulfilled'],
      );
      t.match((outcomes[1] as PromiseRejectedResult).reason.message, /check constraint/);
      t.same(await texts(a), [
        [0, 'a1'],
        [1, 'a2'],
      ]);
      t.same(await texts(b), [[0, 'b ok']], 'no item of the failed append, no gap');
      t.same(
        batcher.stats,
        { statements: 5, appends: 8, retriedBatches: 1, heldBatches: 0 },
        'one batch, then each append alone',
      );
    });

    t.test('an append to a conversation that does not exist rejects alone, without a retry', async (t) => {
      const batcher = new AppendBatcher(sql, log, { window_ms: WINDOW_MS, max_items: 500 });
      const id = await conversation();
      const outcomes = await Promise.allSettled([
        batcher.append('conv_missing', [
          turn('lost', {
            tool_calls: [
              {
                tool: { id: 't', name: 't' },
                request_body: null,
                response_body: null,
                timed_out: false,
                error_message: null,
              },
            ],
          }),
        ]),
        batcher.append(id, [turn('kept')]),
      ]);
      t.equal(outcomes[0].status, 'rejected');
      t.type((outcomes[0] as PromiseRejectedResult).reason, ConversationNotFoundError);
      t.equal(outcomes[1].status, 'fulfilled');
      t.same(await texts(id), [[0, 'kept']]);
      t.same(batcher.stats, { statements: 1, appends: 2, retriedBatches: 0, heldBatches: 0 });
      const [{ n }] = await sql<
        { n: number }[]
      >`select count(*)::int as n from conversation_tool_calls where conversation_id = 'conv_missing'`;
      t.equal(n, 0, 'nor its tool call');
    });

    t.test('a batch carries at most max_items; a bigger append still goes, alone', async (t) => {
      const batcher = new AppendBatcher(sql, log, { window_ms: WINDOW_MS, max_items: 3 });
      const id = await conversation();
      await Promise.all([
        batcher.append(id, [turn('1'), turn('2')]),
        batcher.append(id, [turn('3')]),
        batcher.append(id, [turn('4'), turn('5')]),
        batcher.append(id, [turn('6'), turn('7'), turn('8'), turn('9')]),
      ]);
      t.same(
        (await texts(id)).map(([, text]) => text),
        ['1', '2', '3', '4', '5', '6', '7', '8', '9'],
      );
      t.equal(batcher.stats.statements, 3, '[1 2 3] [4 5] [6 7 8 9]');
    });

    t.test(
      'an append sent again with its item ids (its statement lost after it committed) is stored once',
      async (t) => {
        const id = await conversation();
        const first = [
          turn('1', { id: 'conv_item_00000000-0000-4000-8000-000000000001' }),
          turn('2', { id: 'conv_item_00000000-0000-4000-8000-000000000002' }),
        ];
        const [ids] = await appendItemsBatch(sql, [{ conversationId: id, items: first }]);
        const [again, next] = await appendItemsBatch(sql, [
          { conversationId: id, items: first },
          { conversationId: id, items: [turn('3')] },
        ]);
        t.same(again, ids, 'the resend answers the ids as written');
        t.notOk(next instanceof Error, 'an append beside it lands');
        t.same(
          await texts(id),
          [
            [0, '1'],
            [1, '2'],
            [2, '3'],
          ],
          'nothing twice, no gap in the indexes',
        );
      },
    );

    t.test('flush waits for what is queued', async (t) => {
      const batcher = new AppendBatcher(sql, log, { window_ms: 60_000, max_items: 500 });
      const id = await conversation();
      const appended = batcher.append(id, [turn('queued')]);
      await batcher.flush();
      t.same(await texts(id), [[0, 'queued']], 'written without waiting out the window');
      t.equal((await appended).length, 1);
    });
  });
}
