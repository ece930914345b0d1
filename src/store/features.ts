// Per-workspace feature flags: `organizations.features`, a JSON object of booleans set by operators.
import type { Sql } from './db.js';

/** The workspace's flag `name`: true, false, or undefined when it is not set (or not a boolean). */
export async function featureFlag(sql: Sql, orgId: string, name: string): Promise<boolean | undefined> {
  const [row] = await sql<{ flag: boolean | null }[]>`
    select case when jsonb_typeof(features -> ${name}) = 'boolean'
                then (features -> ${name})::boolean end as flag
    from organizations where id = ${orgId}`;
  return row?.flag ?? undefined;
}

/** Sets (true/false) or clears (null) the workspace's flag `name`; false when there is no such workspace. */
export async function setFeatureFlag(sql: Sql, orgId: string, name: string, enabled: boolean | null): Promise<boolean> {
  const rows =
    enabled === null
      ? await sql`update organizations set features = features - ${name} where id = ${orgId} returning id`
      : await sql`update organizations set features = features || ${sql.json({ [name]: enabled })}
                  where id = ${orgId} returning id`;
  return rows.length > 0;
}
