// One transaction on a connection of its own. postgres.js's sql.begin() sends BEGIN through the shared pool and
// only claims the connection once that write reports it was accepted without backpressure and with room in the
// pipeline (postgres 3.4 src/index.js begin/onexecute, src/connection.js execute). Under load the BEGIN can go out
// while that check fails, and the driver then rejects the transaction with UNSAFE_TRANSACTION ("Only use
// sql.begin, sql.reserved or max: 1"): conversations under a ramp of connects failed to be created that way
// (bench/sts.ts). A reserved connection is taken only when idle and is ours until released, so BEGIN, the body,
// and COMMIT or ROLLBACK always run on it, with nothing of anyone else's pipelined in between.
import type postgres from 'postgres';
import type { Sql } from './db.js';

/** The connection a transaction's statements run on. */
// eslint-disable-next-line @typescript-eslint/no-empty-object-type -- postgres.js's way to say: no custom types
export type Tx = postgres.ReservedSql<{}>;

/**
 * Runs `fn` inside BEGIN ... COMMIT on a reserved connection; any error rolls back and is rethrown. The
 * connection goes back to the pool in every case (after a failed ROLLBACK too: the driver's own error then
 * closes it).
 */
export async function transaction<T>(sql: Sql, fn: (tx: Tx) => Promise<T>): Promise<T> {
  const tx = await sql.reserve();
  try {
    await tx`begin`;
    let result: T;
    try {
      result = await fn(tx);
    } catch (err) {
      await tx`rollback`.catch((rollbackErr: unknown) => {
        throw new AggregateError([err, rollbackErr], 'transaction failed and its rollback failed too');
      });
      throw err;
    }
    await tx`commit`;
    return result;
  } finally {
    tx.release();
  }
}

/**
 * A transaction whose statements need no answer in between, sent at once: BEGIN, `statements(tx)` and COMMIT are
 * issued together on the reserved connection, which postgres.js pipelines into one write (src/connection.js
 * execute: a prepared query does not wait for the one before), so the whole transaction costs about one round trip
 * instead of one per statement. The first time a connection runs a statement with parameters it describes it
 * first, which holds the pipeline for that statement only. A failing statement aborts the transaction in the
 * server: the statements after it fail, COMMIT then ends it as ROLLBACK, and the first error is thrown. Resolves
 * with each statement's rows.
 */
export async function pipelinedTransaction<R extends postgres.Row[]>(
  sql: Sql,
  statements: (tx: Tx) => postgres.PendingQuery<R>[],
): Promise<postgres.RowList<R>[]> {
  const tx = await sql.reserve();
  try {
    const begin = tx`begin`;
    const body = statements(tx);
    const commit = tx`commit`;
    const settled = await Promise.allSettled([begin, ...body, commit]);
    const failed = settled.find((s): s is PromiseRejectedResult => s.status === 'rejected');
    if (failed) throw failed.reason;
    return settled.slice(1, -1).map((s) => (s as PromiseFulfilledResult<postgres.RowList<R>>).value);
  } finally {
    tx.release();
  }
}
