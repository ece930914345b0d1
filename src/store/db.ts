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

// eslint-disable-next-line @typescript-eslint/no-empty-object-type -- postgres.js's way to say: no custom types
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

/**
 * How the driver behaves while the database is unreachable: a request fails within about connect_timeout_sec
 * instead of hanging (postgres.js waits 30 s by default), and a connection that failed is tried again after at most
 * max_reconnect_delay_sec (postgres.js backs off up to 20 s by default, and every query queued on that connection
 * waits it out).
 */
export const DATABASE_TIMEOUTS = {
  connect_timeout_sec: 5,
  max_reconnect_delay_sec: 0.5,
} as const;

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

/** PostgreSQL over the network (DATABASE_TIMEOUTS); the embedded one runs in this process and keeps the defaults. */
const remote = {
  ...common,
  connect_timeout: DATABASE_TIMEOUTS.connect_timeout_sec,
  // postgres.js's own curve (3^n / 100 s, jittered), capped.
  backoff: (attempts: number) =>
    Math.min((0.5 + Math.random() / 2) * (3 ** attempts / 100), DATABASE_TIMEOUTS.max_reconnect_delay_sec),
} as const;

/**
 * Error codes of postgres.js and Node sockets that mean the database could not be reached or the connection was lost
 * (the statement may or may not have run), as opposed to the database refusing a statement.
 */
const UNREACHABLE_CODES = new Set([
  'CONNECTION_CLOSED',
  'CONNECTION_ENDED',
  'CONNECTION_DESTROYED',
  'CONNECT_TIMEOUT',
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
]);

/**
 * SQLSTATEs (PostgreSQL docs, Appendix A) of a server that cannot serve now: class 08 connection exception, 57P01-03
 * (shutting down, crashed, starting up), 53300 too many connections.
 */
function unavailableSqlState(code: string): boolean {
  return code.startsWith('08') || code === '57P01' || code === '57P02' || code === '57P03' || code === '53300';
}

/**
 * Whether `err` says the database is unavailable (unreachable, connection lost, shutting down or starting up), so
 * the same request may succeed later: the API answers 503 with Retry-After, and writes of a live conversation are
 * held and tried again (src/store/append-batcher.ts). A statement the database refused for what it holds is not.
 */
export function isDatabaseUnavailable(err: unknown): boolean {
  if (err instanceof AggregateError) return err.errors.some(isDatabaseUnavailable);
  if (err instanceof postgres.PostgresError) return unavailableSqlState(err.code);
  if (!(err instanceof Error) || !('code' in err)) return false;
  return typeof err.code === 'string' && UNREACHABLE_CODES.has(err.code);
}

/** Runs a trivial statement: resolves when the database answered, rejects as the statement would. */
export async function pingDatabase(sql: Sql): Promise<void> {
  await sql`select 1`;
}

export async function openStore(settings: Settings, log: Logger, opts: OpenStoreOptions = {}): Promise<Store> {
  if (settings.DATABASE_URL) {
    const sql = postgres(settings.DATABASE_URL, { max: POSTGRES_POOL_SIZE, ...remote });
    try {
      await sql`select 1`;
    } catch (err) {
      await sql.end({ timeout: 1 });
      throw new StoreError(`cannot connect to DATABASE_URL: ${(err as Error).message}`, { cause: err });
    }
    // Connects on its first statement.
    const reads = postgres(settings.DATABASE_URL, {
      ...remote,
      max: 1,
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
    ...common,
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
