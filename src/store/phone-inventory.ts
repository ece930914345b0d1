// The phone-number inventory (`phone_number_inventory`): numbers `assign-automatically` may draw, of one workspace
// or (org_id null) of any. Drawing one is part of an agent write (agents.ts drawFreeNumber).
import type { Sql } from './db.js';

/** Adds the numbers not yet in the inventory; returns those added. */
export async function addToInventory(sql: Sql, orgId: string | null, numbers: string[]): Promise<string[]> {
  const added = await sql<{ number: string }[]>`
    insert into phone_number_inventory (number, org_id)
    select n, ${orgId} from unnest(${numbers}::text[]) as n
    on conflict (number) do nothing returning number`;
  return added.map((r) => r.number);
}

/** The whole inventory, by number. */
export async function listInventory(sql: Sql): Promise<{ number: string; org_id: string | null }[]> {
  return sql<
    { number: string; org_id: string | null }[]
  >`select number, org_id from phone_number_inventory order by number`;
}
