// Node-wide values kept in the database (`settings`, key -> text), e.g. the generated signing secret.
import type { Sql } from './db.js';

/** The stored value of `key`, storing `initial` first when it has none (the first writer wins a race). */
export async function settingOrInsert(sql: Sql, key: string, initial: string): Promise<string> {
  await sql`insert into settings (key, value) values (${key}, ${initial}) on conflict (key) do nothing`;
  const [row] = await sql<{ value: string }[]>`select value from settings where key = ${key}`;
  return row?.value ?? initial;
}
