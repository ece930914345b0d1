// A cancel through the API (POST /v1/conversations/{id}/cancel, cancelConversation) racing the live side's finish
// (finishConversation), both started together, many times and in both orders. Both lock the conversation's row first,
// so one of them ends it and the other sees that ending: exactly one ending (ended_by user_canceled with the cancel's
// time, or the finish's own), and either way what the call produced is kept (docs/CONTRACTS.md, "Conversations
// store": a finish after a cancel fills in the transcript, latencies, interruptions, task results and the recording).
// No error, one recording row, the lease freed. Runs on both databases, each a temp database of the test server
// (PostgreSQL through createTempDatabase); on PGlite the two queue on its one connection, and there the cancel's
// transaction took it first in every run seen so far, so only PostgreSQL races both ways.
import t from 'tap';
import { DB_KINDS, startTestServer } from '../helpers/server.js';
import {
  appendItems,
  cancelConversation,
  createConversation,
  finishConversation,
  getConversation,
  type Finish,
  type NewRecording,
} from '../../src/store/conversations.js';
import { admit, type LeasePolicy } from '../../src/store/leases.js';

/** Races per order and database. */
const ROUNDS = 50;
/** How long each conversation has been live when the race starts: the cancel counts its duration from it. */
const LIVE_MS = 5000;
const LEASES: LeasePolicy = { nodeId: 'node-race', ttlSec: 60, workspaceCap: 10_000 };

// Two databases, each a fresh server, 2 x ROUNDS races on each.
t.setTimeout(300_000);

type Order = 'cancel first' | 'finish first';
const ORDERS: Order[] = ['cancel first', 'finish first'];

for (const db of DB_KINDS) {
  t.test(`cancel racing a finish on ${db}`, { timeout: 240_000 }, async (t) => {
    const server = await startTestServer({ db });
    t.teardown(() => server.close());
    const { sql, orgId, projectId } = server;

    // What the live side sends when it ends (src/conversation/record.ts): its own ending, later than the cancel's.
    const finishEndedAt = new Date(Date.now() + 3_600_000);
    const finish: Finish = {
      ended_by: 'user',
      ended_at: finishEndedAt,
      duration_ms: 99_999,
      live_transcript: 'user: hi\nassistant: hello',
      latencies_ms: [120, 340.5],
      interruptions_count: 2,
      task_results: { score: 4 },
    };
    const wav = (id: string): NewRecording => ({
      side: 'both',
      path: `${id}.wav`,
      format: 'wav',
      sample_rate: 16000,
      channels: 2,
      bytes: 4444,
      compress_to: 'wav.gz',
    });

    /** Which side won, per order (the races are real: either may, and the split varies from run to run). */
    const wins: Record<Order, { cancel: number; finish: number }> = {
      'cancel first': { cancel: 0, finish: 0 },
      'finish first': { cancel: 0, finish: 0 },
    };
    for (const order of ORDERS) {
      await t.test(`${order}, ${ROUNDS} rounds: one ending, nothing the call produced lost`, async (t) => {
        for (let round = 0; round < ROUNDS; round++) {
          const at = `${order}, round ${round}`;
          const id = await createConversation(sql, {
            orgId,
            projectId,
            origin: 'web',
            state: 'active',
            started_at: new Date(Date.now() - LIVE_MS),
          });
          t.equal((await admit(sql, LEASES, projectId, id)).admitted, true);
          await appendItems(sql, id, [
            { role: 'assistant', live_transcript: 'hello', duration_ms: 800, started_at: new Date() },
          ]);

          const cancel = () => cancelConversation(sql, id);
          const end = () => finishConversation(sql, id, finish, [wav(id)]);
          const [canceled, finished] = await (order === 'cancel first'
            ? Promise.all([cancel(), end()])
            : Promise.all([end(), cancel()]).then(([f, c]) => [c, f] as const));

          const cancelWon = canceled === 'canceled';
          if (cancelWon) wins[order].cancel++;
          else wins[order].finish++;
          t.equal(
            canceled,
            cancelWon ? 'canceled' : 'already_ended',
            `${at}: the cancel answers canceled or already_ended`,
          );
          t.same(
            finished,
            { ended: !cancelWon, recordingsStored: true },
            `${at}: exactly one of the two ended it; the recording stored`,
          );

          const got = (await getConversation(sql, id))!;
          const r = got.record;
          t.equal(got.state, 'ended', `${at}: ended`);
          if (cancelWon) {
            t.equal(r.ended_by, 'user_canceled', `${at}: the cancel's ended_by stands`);
            t.not(r.ended_at, finishEndedAt.toISOString(), `${at}: the cancel's ended_at`);
            t.ok(
              r.duration_ms >= LIVE_MS - 1000 && r.duration_ms < 99_999,
              `${at}: the cancel's duration (${r.duration_ms} ms)`,
            );
          } else {
            t.equal(r.ended_by, 'user', `${at}: the finish's ended_by stands`);
            t.equal(r.ended_at, finishEndedAt.toISOString(), `${at}: the finish's ended_at`);
            t.equal(r.duration_ms, 99_999, `${at}: the finish's duration`);
          }
          t.equal(r.live_transcript, finish.live_transcript, `${at}: the finish's transcript kept`);
          t.same(r.analysis.latencies_ms, finish.latencies_ms, `${at}: the finish's latencies kept`);
          t.equal(r.analysis.interruptions_count, 2, `${at}: the finish's interruptions kept`);
          t.same(r.task_results, finish.task_results, `${at}: the finish's task results kept`);
          t.same(
            r.items.map((i) => [i.role, i.live_transcript]),
            [['assistant', 'hello']],
            `${at}: the item, once`,
          );
          t.match(
            got.recording,
            { side: 'both', path: `${id}.wav`, format: 'wav', bytes: 4444 },
            `${at}: the finish's recording kept`,
          );

          const [rows] = await sql<{ recordings: number; leases: number }[]>`
            select (select count(*)::int from conversation_recordings where conversation_id = ${id}) as recordings,
              (select count(*)::int from conversation_leases where conversation_id = ${id}) as leases`;
          t.same(rows, { recordings: 1, leases: 0 }, `${at}: one recording row, the lease freed`);
        }
      });
    }
    for (const order of ORDERS)
      t.comment(`${db}, ${order}: the cancel won ${wins[order].cancel}, the finish ${wins[order].finish}`);
  });
}
