// Helpers every resource uses: the `project` query parameter, name-or-id addressing (spec, "Conventions").
import { z } from 'zod';
import type { Sql } from '../store/db.js';
import { isId } from '../store/ids.js';
import type { ProjectRow } from '../store/projects.js';
import { forbidden, notFound } from './errors.js';

export { isId };

/** The `project` query parameter: a project name (default `main`) or id. */
export const projectQuery = z.object({
  project: z.string().min(1).max(200).default('main').describe('project name or id; applies when a resource is addressed by name'),
});


/**
 * The project named or identified by `projectQuery` in the caller's workspace: 404 when missing,
 * 403 when the id names a project of another workspace (spec, "Authentication" 7).
 */
export async function resolveProject(sql: Sql, orgId: string, projectQuery = 'main'): Promise<ProjectRow> {
  if (isId('proj', projectQuery)) {
    const [row] = await sql<ProjectRow[]>`select * from projects where id = ${projectQuery}`;
    if (!row) throw notFound('project', projectQuery);
    if (row.org_id !== orgId) throw forbidden('project belongs to another workspace');
    return row;
  }
  const [row] = await sql<ProjectRow[]>`select * from projects where org_id = ${orgId} and name = ${projectQuery}`;
  if (!row) throw notFound('project', projectQuery);
  return row;
}

/** Throws 404 when `row` is missing and 403 when it belongs to another workspace; returns it otherwise. */
export function ownedBy<T extends { org_id: string }>(row: T | undefined, orgId: string, what: string, nameOrId: string): T {
  if (!row) throw notFound(what, nameOrId);
  if (row.org_id !== orgId) throw forbidden(`${what} belongs to another workspace`);
  return row;
}
