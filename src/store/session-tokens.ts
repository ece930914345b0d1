// Session tokens repository: rows of `session_tokens` (the secret only as its SHA-256) and the lookup that
// authenticates a token.
import { pointReads, type Sql } from './db.js';
import { newId } from './ids.js';

export interface SessionTokenCredentialRow {
  id: string;
  org_id: string;
  api_key_id: string | null;
  conversation_ids: string[] | null;
  expires_at: Date;
  ip_allowlist: string[];
}

export async function insertSessionToken(
  sql: Sql,
  t: { orgId: string; apiKeyId: string; tokenHash: string; conversationIds: string[] | null; expiresAt: Date },
): Promise<void> {
  await sql`insert into session_tokens (id, org_id, api_key_id, token_hash, conversation_ids, expires_at)
            values (${newId('session_token')}, ${t.orgId}, ${t.apiKeyId}, ${t.tokenHash},
                    ${t.conversationIds ? sql.json(t.conversationIds) : null}, ${t.expiresAt})`;
}

/** Deletes the workspace's tokens that expired before `now`. */
export async function deleteExpiredSessionTokens(sql: Sql, orgId: string, now: Date): Promise<void> {
  await sql`delete from session_tokens where org_id = ${orgId} and expires_at < ${now}`;
}

/** The unexpired token whose secret hashes to `digest`, with its workspace's ip_allowlist; one indexed query, a point read. */
export async function sessionTokenByDigest(
  sql: Sql,
  digest: string,
  now: Date,
): Promise<SessionTokenCredentialRow | undefined> {
  const [row] = await pointReads(sql)<SessionTokenCredentialRow[]>`
    select t.id, t.org_id, t.api_key_id, t.conversation_ids, t.expires_at, o.ip_allowlist
    from session_tokens t join organizations o on o.id = t.org_id
    where t.token_hash = ${digest} and t.expires_at > ${now}`;
  return row;
}
