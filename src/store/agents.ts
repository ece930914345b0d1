// Agents repository: rows of `agents`, their versions and phone numbers, the number inventory, and the
// per-agent write lock (concurrent writes of one agent answer "busy" instead of waiting).
import type { AgentConfig, ConfigurationEndpoint } from '../schemas/agents.js';
import { pointReads, type Sql } from './db.js';
import { newId } from './ids.js';
import { transaction, type Tx } from './transaction.js';

type Json = Parameters<Sql['json']>[0];
export type { Tx };

export interface AgentRow {
  id: string;
  org_id: string;
  project_id: string;
  name: string;
  slug: string | null;
  enabled: boolean;
  version: number;
  config: AgentConfig;
  created_at: Date;
  updated_at: Date;
}

export type PhoneKind = 'auto' | 'custom';
export interface PhoneRow {
  number: string;
  agent_id: string;
  org_id: string;
  kind: PhoneKind;
  configuration_endpoint: ConfigurationEndpoint | null;
}

/** Another write of the agent is in flight: the write is refused at once (the caller retries), not queued. */
export class AgentBusyError extends Error {
  constructor(readonly agentId: string) {
    super(`agent ${agentId} is being updated; retry`);
    this.name = 'AgentBusyError';
  }
}

/** PostgreSQL SQLSTATE 55P03 lock_not_available: what FOR UPDATE NOWAIT raises on a locked row. */
const LOCK_NOT_AVAILABLE = '55P03';

/**
 * Agents being written in this process. PGlite has one session (row locks do not exclude it from itself), so
 * the in-process set is what answers "busy" there; on PostgreSQL FOR UPDATE NOWAIT does it across nodes too.
 */
export class AgentWriteLocks {
  private readonly inFlight = new Set<string>();

  /** Takes the in-process lock of the agent: its release, or null when a write of the agent is in flight. */
  tryAcquire(agentId: string): (() => void) | null {
    if (this.inFlight.has(agentId)) return null;
    this.inFlight.add(agentId);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.inFlight.delete(agentId);
    };
  }

  /** Runs `fn` holding the agent's in-process lock; throws AgentBusyError when a write of the agent is in flight. */
  async hold<T>(agentId: string, fn: () => Promise<T>): Promise<T> {
    const release = this.tryAcquire(agentId);
    if (!release) throw new AgentBusyError(agentId);
    try {
      return await fn();
    } finally {
      release();
    }
  }

  /**
   * Runs `fn` in a transaction holding the agent's lock, with the agent's version as locked (null when the agent
   * is gone); throws AgentBusyError when another write holds it.
   */
  async run<T>(sql: Sql, agentId: string, fn: (tx: Tx, lockedVersion: number | null) => Promise<T>): Promise<T> {
    return this.hold(agentId, () =>
      transaction(sql, async (tx) => {
        let locked: { version: number } | undefined;
        try {
          [locked] = await tx<
            { version: number }[]
          >`select version from agents where id = ${agentId} for update nowait`;
        } catch (err) {
          throw busyOnLock(err, agentId);
        }
        return fn(tx, locked?.version ?? null);
      }),
    );
  }
}

/** A row lock another transaction holds (FOR UPDATE NOWAIT) as AgentBusyError; other errors as they are. */
function busyOnLock(err: unknown, agentId: string): unknown {
  return (err as { code?: string }).code === LOCK_NOT_AVAILABLE ? new AgentBusyError(agentId) : err;
}

/**
 * The agent's version under its row lock, taken without waiting and released at once (one statement): what a
 * write that changes nothing checks. Null when the agent is gone; AgentBusyError when another transaction holds it.
 */
export async function lockAgentVersion(sql: Sql, agentId: string): Promise<number | null> {
  try {
    const [row] = await sql<{ version: number }[]>`select version from agents where id = ${agentId} for update nowait`;
    return row?.version ?? null;
  } catch (err) {
    throw busyOnLock(err, agentId);
  }
}

/**
 * A change of an existing agent's name, slug and config that leaves its phone numbers as they are, in one
 * statement (atomic without a transaction, one round trip): takes the agent's row lock without waiting and, only
 * when the agent is still at `expectedVersion`, writes the next version and appends it to the history with
 * `phones` (its numbers, sorted). Answers the version found under the lock (null: the agent is gone) and the row
 * after the write (undefined: not written, the version differed). AgentBusyError when another transaction holds
 * the row.
 */
export async function updateAgentAtVersion(
  sql: Sql,
  agentId: string,
  expectedVersion: number,
  w: { name: string; slug: string | null; config: AgentConfig },
  phones: Pick<PhoneRow, 'number' | 'kind'>[],
): Promise<{ lockedVersion: number | null; row?: AgentRow }> {
  let rows: (Partial<AgentRow> & { locked_version: number })[];
  try {
    rows = await sql<(Partial<AgentRow> & { locked_version: number })[]>`
      with locked as (select id, version from agents where id = ${agentId} for update nowait),
      written as (
        update agents a set name = ${w.name}, slug = ${w.slug}, config = ${sql.json(w.config as unknown as Json)},
          version = a.version + 1, updated_at = now()
        from locked where a.id = locked.id and locked.version = ${expectedVersion}
        returning a.*),
      history as (
        insert into agent_versions (agent_id, version, name, slug, enabled, config, phone_numbers)
        select id, version, name, slug, enabled, config,
          ${sql.json(phones.map((p) => ({ number: p.number, kind: p.kind })))}
        from written)
      select locked.version as locked_version, written.* from locked left join written on true`;
  } catch (err) {
    throw busyOnLock(err, agentId);
  }
  const [r] = rows;
  if (!r) return { lockedVersion: null };
  const { locked_version: locked, ...row } = r;
  return { lockedVersion: locked, row: row.id ? (row as AgentRow) : undefined };
}

export async function agentById(sql: Sql | Tx, id: string): Promise<AgentRow | undefined> {
  const [row] = await sql<AgentRow[]>`select * from agents where id = ${id}`;
  return row;
}

export async function agentByName(sql: Sql | Tx, projectId: string, name: string): Promise<AgentRow | undefined> {
  const [row] = await sql<AgentRow[]>`select * from agents where project_id = ${projectId} and name = ${name}`;
  return row;
}

/**
 * The read path of GET /v1/agents/{name} in one round trip, a point read: the agent by name in the workspace's
 * project (by project name or id), its project's name and its phone numbers. Undefined when either is missing.
 */
export async function agentForRead(
  sql: Sql,
  orgId: string,
  project: string,
  name: string,
): Promise<{ row: AgentRow; projectName: string; phones: PhoneRow[] } | undefined> {
  const [r] = await pointReads(sql)<(AgentRow & { project_name: string; phones: PhoneRow[] })[]>`
    select a.*, p.name as project_name,
      coalesce((select json_agg(json_build_object('number', n.number, 'agent_id', n.agent_id, 'org_id', n.org_id,
                 'kind', n.kind, 'configuration_endpoint', n.configuration_endpoint) order by n.number)
               from agent_phone_numbers n where n.agent_id = a.id), '[]'::json) as phones
    from agents a join projects p on p.id = a.project_id
    where p.org_id = ${orgId} and (p.name = ${project} or p.id = ${project}) and a.name = ${name}`;
  if (!r) return undefined;
  const { project_name: projectName, phones, ...row } = r;
  return { row: row, projectName, phones };
}

/** The id of the project's agent whose `by` column equals `value`, if any. */
export async function findAgentId(
  sql: Sql | Tx,
  projectId: string,
  by: 'id' | 'name' | 'slug',
  value: string,
): Promise<string | undefined> {
  const column = by === 'id' ? sql`id` : by === 'name' ? sql`name` : sql`slug`;
  const [row] = await sql<
    { id: string }[]
  >`select id from agents where project_id = ${projectId} and ${column} = ${value}`;
  return row?.id;
}

export async function listAgents(sql: Sql, projectId: string): Promise<AgentRow[]> {
  return sql<AgentRow[]>`select * from agents where project_id = ${projectId} order by created_at, name`;
}

/** Names of the agents of a project among `names`. */
export async function existingAgentNames(sql: Sql | Tx, projectId: string, names: string[]): Promise<Set<string>> {
  if (names.length === 0) return new Set();
  const rows = await sql<
    { name: string }[]
  >`select name from agents where project_id = ${projectId} and name = any(${names})`;
  return new Set(rows.map((r) => r.name));
}

/** Phone numbers of each agent, sorted. */
export async function phonesOf(sql: Sql | Tx, agentIds: string[]): Promise<Map<string, PhoneRow[]>> {
  const out = new Map<string, PhoneRow[]>(agentIds.map((id) => [id, []]));
  if (agentIds.length === 0) return out;
  const rows = await sql<PhoneRow[]>`
    select number, agent_id, org_id, kind, configuration_endpoint from agent_phone_numbers
    where agent_id = any(${agentIds}) order by number`;
  for (const r of rows) out.get(r.agent_id)?.push(r);
  return out;
}

export async function phoneOwner(sql: Sql | Tx, number: string): Promise<PhoneRow | undefined> {
  const [row] = await sql<PhoneRow[]>`
    select number, agent_id, org_id, kind, configuration_endpoint from agent_phone_numbers where number = ${number}`;
  return row;
}

/** Serializes enable decisions of one organization (its enabled-agents maximum) until the transaction ends. */
export async function lockOrgEnablement(tx: Tx, orgId: string): Promise<void> {
  await tx`select pg_advisory_xact_lock(hashtext(${'agents-enabled:' + orgId}))`;
}

export async function countEnabled(sql: Sql | Tx, orgId: string): Promise<number> {
  const [{ n }] = await sql<{ n: number }[]>`select count(*)::int as n from agents where org_id = ${orgId} and enabled`;
  return n;
}

export interface NewAgent {
  orgId: string;
  projectId: string;
  name: string;
  slug: string | null;
  enabled: boolean;
  config: AgentConfig;
}

export async function insertAgent(tx: Tx, a: NewAgent): Promise<AgentRow> {
  const [row] = await tx<AgentRow[]>`
    insert into agents (id, org_id, project_id, name, slug, enabled, version, config)
    values (${newId('agent')}, ${a.orgId}, ${a.projectId}, ${a.name}, ${a.slug}, ${a.enabled}, 1, ${tx.json(a.config as unknown as Json)})
    returning *`;
  return row;
}

/** Writes name, slug and config as the next version; returns the row after the write. */
export async function updateAgent(
  tx: Tx,
  id: string,
  w: { name: string; slug: string | null; config: AgentConfig },
): Promise<AgentRow> {
  const [row] = await tx<AgentRow[]>`
    update agents set name = ${w.name}, slug = ${w.slug}, config = ${tx.json(w.config as unknown as Json)},
      version = version + 1, updated_at = now()
    where id = ${id} returning *`;
  return row;
}

/** A change of phone numbers only: the next version of the same configuration. */
export async function bumpVersion(tx: Tx, id: string): Promise<AgentRow> {
  const [row] = await tx<
    AgentRow[]
  >`update agents set version = version + 1, updated_at = now() where id = ${id} returning *`;
  return row;
}

/**
 * Appends the agent as it now is (row and phone numbers) to its history. `phones`: its numbers as the caller
 * just wrote them (sorted by number), saving a query; read here when not given.
 */
export async function recordVersion(
  tx: Tx,
  row: AgentRow,
  phones?: Pick<PhoneRow, 'number' | 'kind'>[],
): Promise<void> {
  phones ??= (await phonesOf(tx, [row.id])).get(row.id) ?? [];
  await tx`
    insert into agent_versions (agent_id, version, name, slug, enabled, config, phone_numbers)
    values (${row.id}, ${row.version}, ${row.name}, ${row.slug}, ${row.enabled}, ${tx.json(row.config as unknown as Json)},
            ${tx.json(phones.map((p) => ({ number: p.number, kind: p.kind })))})`;
}

export async function agentVersions(
  sql: Sql,
  id: string,
): Promise<{ version: number; name: string; config: AgentConfig }[]> {
  return sql`select version, name, config from agent_versions where agent_id = ${id} order by version`;
}

export async function setEnabled(sql: Sql | Tx, id: string, enabled: boolean): Promise<void> {
  await sql`update agents set enabled = ${enabled}, updated_at = now() where id = ${id}`;
}

export async function deleteAgent(sql: Sql, id: string): Promise<void> {
  await transaction(sql, async (tx) => {
    await tx`update projects set default_agent_id = null where default_agent_id = ${id}`;
    await tx`delete from agents where id = ${id}`;
  });
}

export async function addPhone(
  tx: Tx,
  p: {
    number: string;
    agentId: string;
    orgId: string;
    kind: PhoneKind;
    configurationEndpoint?: ConfigurationEndpoint | null;
  },
): Promise<void> {
  const endpoint = p.configurationEndpoint ? tx.json(p.configurationEndpoint) : null;
  await tx`insert into agent_phone_numbers (number, agent_id, org_id, kind, configuration_endpoint)
           values (${p.number}, ${p.agentId}, ${p.orgId}, ${p.kind}, ${endpoint})`;
}

export async function setPhoneEndpoint(tx: Tx, number: string, endpoint: ConfigurationEndpoint | null): Promise<void> {
  await tx`update agent_phone_numbers set configuration_endpoint = ${endpoint ? tx.json(endpoint) : null}
           where number = ${number}`;
}

export async function removePhones(tx: Tx, agentId: string, numbers: string[]): Promise<void> {
  if (numbers.length === 0) return;
  await tx`delete from agent_phone_numbers where agent_id = ${agentId} and number = any(${numbers})`;
}

/**
 * A number `assign-automatically` may draw for the organization: from the inventory table (numbers of the
 * organization or of any) and the configured list, not assigned to any agent. Random among the free ones.
 */
export async function drawFreeNumber(tx: Tx, orgId: string, configured: string[]): Promise<string | null> {
  const [row] = await tx<{ number: string }[]>`
    select n.number from (
      select number from phone_number_inventory where org_id is null or org_id = ${orgId}
      union select unnest(${configured}::text[])
    ) n
    where not exists (select 1 from agent_phone_numbers a where a.number = n.number)
    order by random() limit 1`;
  return row?.number ?? null;
}

const locksByOwner = new WeakMap<object, AgentWriteLocks>();
/** The agent write locks of one control plane (keyed by its context, so two servers in a process do not share). */
export function agentWriteLocks(owner: object): AgentWriteLocks {
  let locks = locksByOwner.get(owner);
  if (!locks) {
    locks = new AgentWriteLocks();
    locksByOwner.set(owner, locks);
  }
  return locks;
}

/** The agent a phone number is assigned to, with the number's own configuration endpoint (inbound calls). */
export async function agentByPhoneNumber(
  sql: Sql,
  number: string,
): Promise<{ row: AgentRow; phone: PhoneRow } | undefined> {
  const phone = await phoneOwner(sql, number);
  if (!phone) return undefined;
  const row = await agentById(sql, phone.agent_id);
  return row ? { row, phone } : undefined;
}
