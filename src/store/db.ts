// The store: postgres.js on PostgreSQL (DATABASE_URL, a pool) or on embedded PGlite in its own thread
// (one connection: pglite-socket 0.2 interleaves concurrent connections).
import { mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import postgres from 'postgres';
import type { Settings } from '../config.js';
import type { Logger } from '../log.js';
import { StoreError } from './errors.js';
import { acquireLock } from './lock.js';
import { startPgliteThread, type PgliteThread } from './pglite.js';

export type Sql = postgres.Sql<{}>;

export interface Store {
  readonly sql: Sql;
  readonly kind: 'pglite' | 'postgres';
  /** Embedded only: writes the database as a tarball a later openStore can start from (`pgliteLoadFrom`). */
  dump(path: string): Promise<void>;
  close(): Promise<void>;
}

export interface OpenStoreOptions {
  /** Embedded only: keep the database in memory, starting from this dump (tests). No data dir, no lock. */
  pgliteLoadFrom?: string;
  /** Embedded only: a fresh in-memory database (tests making a template). */
  pgliteInMemory?: boolean;
  /** Embedded only: the store thread ended while the store was open. */
  onLost?: (err: StoreError) => void;
}

/** Connections of the pool on PostgreSQL. */
const POSTGRES_POOL_SIZE = 10;

/** The application_name of the point-read connection, as pg_stat_activity shows it. */
export const POINT_READS_APPLICATION_NAME = 'parley point reads';

/**
 * The point-read connection of each PostgreSQL pool (the embedded database has one connection, which is it). One
 * connection: the statements concurrent requests give it in one turn of the event loop leave in one socket write
 * and come back together (postgres.js pipelines on a connection), where the pool spends a write, a read and a
 * wake-up of a server process on each.
 */
const pointReadConnections = new WeakMap<Sql, Sql>();

/**
 * Where a point read on the request path runs: a single statement found by a unique index, answered well under a
 * millisecond (a slow statement would hold up the ones pipelined behind it), never inside a transaction, reading
 * what the pool committed before it was issued. `sql` itself when it has no point-read connection.
 */
export function pointReads(sql: Sql): Sql {
  return pointReadConnections.get(sql) ?? sql;
}

const common = {
  // Notices (e.g. "relation already exists, skipping") are not errors.
  onnotice: () => {},
} as const;

export async function openStore(settings: Settings, log: Logger, opts: OpenStoreOptions = {}): Promise<Store> {
  if (settings.DATABASE_URL) {
    const sql = postgres(settings.DATABASE_URL, { max: POSTGRES_POOL_SIZE, onnotice: common.onnotice });
    try {
      await sql`select 1`;
    } catch (err) {
      await sql.end({ timeout: 1 });
      throw new StoreError(`cannot connect to DATABASE_URL: ${(err as Error).message}`, { cause: err });
    }
    // Connects on its first statement.
    const reads = postgres(settings.DATABASE_URL, {
      max: 1,
      onnotice: common.onnotice,
      connection: { application_name: POINT_READS_APPLICATION_NAME },
    });
    pointReadConnections.set(sql, reads);
    log.info('store: PostgreSQL');
    return {
      sql,
      kind: 'postgres',
      dump: () => Promise.reject(new StoreError('dump is for the embedded database only')),
      close: async () => {
        await Promise.all([sql.end({ timeout: 5 }), reads.end({ timeout: 5 })]);
      },
    };
  }

  const inMemory = opts.pgliteInMemory || opts.pgliteLoadFrom !== undefined;
  let lock: { release(): void } | null = null;
  let dataDir: string | undefined;
  if (!inMemory) {
    const root = resolve(settings.PARLEY_DATA_DIR);
    mkdirSync(root, { recursive: true });
    lock = acquireLock(root);
    dataDir = join(root, 'pgdata');
  }
  let thread: PgliteThread;
  try {
    thread = await startPgliteThread({ dataDir, loadFrom: opts.pgliteLoadFrom }, (err) => {
      // Nothing can be stored any more: say so loudly; main decides whether to stop.
      log.fatal({ err: { message: err.message } }, 'store: the embedded database thread ended unexpectedly');
      opts.onLost?.(err);
    });
  } catch (err) {
    lock?.release();
    throw err;
  }
  // max: 1 is the whole point (see above); no idle timeout so the one session stays.
  const sql = postgres({
    host: '127.0.0.1',
    port: thread.port,
    user: 'postgres',
    database: 'postgres',
    max: 1,
    ssl: false,
    onnotice: common.onnotice,
  });
  log.info({ dataDir: dataDir ?? 'memory' }, 'store: embedded PGlite');
  let closed = false;
  return {
    sql,
    kind: 'pglite',
    dump: (path) => thread.dump(path),
    async close() {
      if (closed) return;
      closed = true;
      try {
        await sql.end({ timeout: 5 });
        await thread.close();
      } finally {
        lock?.release();
      }
    },
  };
}
