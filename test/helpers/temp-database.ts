// A throwaway PostgreSQL database for one test: CREATE DATABASE <prefix>_<random> on the test server
// (docs/peers.md), and a drop() that ends the connections still open to it and drops it.
import { randomBytes } from 'node:crypto';
import postgres from 'postgres';

/** The PostgreSQL every test uses. */
export const POSTGRES_ADMIN_URL = process.env.PARLEY_TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

/** Random bytes in a database name: 12 hex digits, so concurrent test processes do not collide. */
const NAME_RANDOM_BYTES = 6;
/** The prefix is spliced into SQL: a plain lower-case identifier only. */
const PREFIX_PATTERN = /^[a-z_][a-z0-9_]*$/;
export const DEFAULT_PREFIX = 'parley_test';

export interface TempDatabase {
  name: string;
  /** Connection URL of the new database (the admin URL with its path replaced). */
  url: string;
  /**
   * Terminates the connections still open to it (DROP DATABASE ... WITH (FORCE), PostgreSQL 13+) and drops it.
   * Safe to call twice; the second call does nothing.
   */
  drop(): Promise<void>;
}

export async function createTempDatabase(prefix: string = DEFAULT_PREFIX): Promise<TempDatabase> {
  if (!PREFIX_PATTERN.test(prefix)) throw new Error(`database name prefix must match ${PREFIX_PATTERN}: ${prefix}`);
  const name = `${prefix}_${randomBytes(NAME_RANDOM_BYTES).toString('hex')}`;
  const admin = postgres(POSTGRES_ADMIN_URL, { max: 1, onnotice: () => {} });
  try {
    await admin.unsafe(`create database ${name}`);
  } catch (err) {
    await admin.end();
    throw new Error(`PostgreSQL on ${POSTGRES_ADMIN_URL} is needed (see .ci/run): ${(err as Error).message}`, {
      cause: err,
    });
  }
  const url = new URL(POSTGRES_ADMIN_URL);
  url.pathname = `/${name}`;
  let dropped: Promise<void> | null = null;
  const drop = () => {
    dropped ??= (async () => {
      try {
        await admin.unsafe(`drop database if exists ${name} with (force)`);
      } finally {
        await admin.end();
      }
    })();
    return dropped;
  };
  return { name, url: url.toString(), drop };
}
