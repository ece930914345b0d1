// The other-workspace rule: a resource addressed by id exists for everyone, but only its own workspace may use
// it. Another workspace's gets `forbidden` (it exists, it is not yours), a missing one `not_found`.
import { forbidden, notFound } from './errors.js';

/** `row` when it belongs to `orgId`; throws not_found when it is missing and forbidden when it is another's. */
export function ownedBy<T extends { org_id: string }>(
  row: T | undefined,
  orgId: string,
  what: string,
  nameOrId: string,
): T {
  if (!row) throw notFound(what, nameOrId);
  if (row.org_id !== orgId) throw forbidden(`${what} belongs to another workspace`);
  return row;
}
