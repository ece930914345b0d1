// The store's connections: the embedded database's one connection keeps many concurrent queries apart
// (pglite-socket 0.2 would interleave several connections), transactions, and the PostgreSQL pool.
import t from 'tap';
import { transaction } from '../../src/store/transaction.js';
import { DB_KINDS, startTestServer } from '../helpers/server.js';

t.setTimeout(300_000);
const CONCURRENT = 200;

for (const db of DB_KINDS) {
  t.test(`store on ${db}`, async (t) => {
    const server = await startTestServer({ db });
    t.teardown(() => server.close());
    const { sql } = server;

    t.test('concurrent queries each get their own rows', async (t) => {
      const results = await Promise.all(
        Array.from(
          { length: CONCURRENT },
          (_, i) => sql<{ i: number; s: string }[]>`select ${i}::int as i, repeat('x', ${i}::int) as s`,
        ),
      );
      const wrong = results.filter((rows, i) => rows.length !== 1 || rows[0].i !== i || rows[0].s.length !== i);
      t.equal(wrong.length, 0);
    });

    t.test('a transaction is isolated from queries running beside it and rolls back on error', async (t) => {
      await sql`create table t_tx (v int)`;
      const failing = transaction(sql, async (tx) => {
        await tx`insert into t_tx values (1)`;
        await tx`select pg_sleep(0.05)`;
        throw new Error('roll back');
      }).then(
        () => null,
        (e: Error) => e,
      );
      const [outside] = await sql<{ n: number }[]>`select count(*)::int as n from t_tx`;
      t.match((await failing)?.message, /roll back/);
      t.equal(outside.n, 0);
      const [after] = await sql<{ n: number }[]>`select count(*)::int as n from t_tx`;
      t.equal(after.n, 0);
      await transaction(sql, async (tx) => {
        await tx`insert into t_tx values (2)`;
        await tx`insert into t_tx values (3)`;
      });
      const [done] = await sql<{ n: number }[]>`select count(*)::int as n from t_tx`;
      t.equal(done.n, 2);
    });

    t.test('transactions beside a flood of pipelined queries all commit on a connection of their own', async (t) => {
      // sql.begin() could be refused with UNSAFE_TRANSACTION when its BEGIN went out on a busy, pipelined
      // connection (src/store/transaction.ts); each of these must commit both rows or neither.
      await sql`create table t_flood (tx int, v int)`;
      const TXS = 40;
      const work: Promise<unknown>[] = [];
      for (let i = 0; i < CONCURRENT; i++) work.push(sql`select ${i}::int as i, repeat('y', 2000) as pad`);
      const txs = Array.from({ length: TXS }, (_, i) =>
        transaction(sql, async (tx) => {
          await tx`insert into t_flood values (${i}, 1)`;
          await tx`insert into t_flood values (${i}, 2)`;
          return i;
        }),
      );
      for (let i = 0; i < CONCURRENT; i++) work.push(sql`select ${i}::int as i`);
      const [results] = await Promise.all([Promise.allSettled(txs), Promise.all(work)]);
      t.same(
        results.filter((r) => r.status === 'rejected').map((r) => String((r as PromiseRejectedResult).reason)),
        [],
      );
      const [n] = await sql<
        { rows: number; txs: number }[]
      >`select count(*)::int as rows, count(distinct tx)::int as txs from t_flood`;
      t.same(n, { rows: 2 * TXS, txs: TXS });
    });

    t.test('json, timestamps and unique violations come back as such', async (t) => {
      const [row] = await sql<
        { j: { a: number[] }; at: Date }[]
      >`select ${sql.json({ a: [1, 2] })}::jsonb as j, now() as at`;
      t.same(row.j, { a: [1, 2] });
      t.type(row.at, Date);
      const err = await sql`insert into organizations (id, name) values ('org_x', 'default')`.then(
        () => null,
        (e) => e,
      );
      t.equal(err?.code, '23505');
    });
  });
}
