// Plain SQL migrations named by timestamp, applied in file-name order once each, each in a transaction.
// Nodes sharing one PostgreSQL serialise on an advisory lock, so two starting at once do not race.
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';
import type { Logger } from '../log.js';
import type { Sql } from './db.js';
import { StoreError } from './errors.js';
import { transaction } from './transaction.js';

export const MIGRATIONS_DIR = fileURLToPath(new URL('./migrations/', import.meta.url));
/** Arbitrary constant key of pg_advisory_xact_lock for migrations ("parley" in ASCII). */
const MIGRATION_LOCK_KEY = 0x7061726c6579;

export function migrationFiles(dir = MIGRATIONS_DIR): string[] {
  return readdirSync(dir)
    .filter((f) => /^\d{14}_[a-z0-9_]+\.sql$/.test(f))
    .sort();
}

/** Applies the migrations not applied yet; returns the names applied now. */
export async function migrate(sql: Sql, log: Logger, dir = MIGRATIONS_DIR): Promise<string[]> {
  await sql`create table if not exists schema_migrations (
    name text primary key,
    applied_at timestamptz not null default now()
  )`;
  const applied: string[] = [];
  for (const file of migrationFiles(dir)) {
    const text = readFileSync(join(dir, file), 'utf8');
    const done = await transaction(sql, async (tx) => {
      await tx`select pg_advisory_xact_lock(${MIGRATION_LOCK_KEY})`;
      const [row] = await tx`select 1 from schema_migrations where name = ${file}`;
      if (row) return false;
      try {
        await tx.unsafe(text).simple();
      } catch (err) {
        throw new StoreError(`migration ${file} failed: ${(err as Error).message}`, { cause: err });
      }
      await tx`insert into schema_migrations (name) values (${file})`;
      return true;
    });
    if (done) {
      applied.push(file);
      log.info({ migration: file }, 'store: migration applied');
    }
  }
  return applied;
}
