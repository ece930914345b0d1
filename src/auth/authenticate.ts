// Who is calling: an API key or a session token, looked up by the SHA-256 of the bearer secret in one
// indexed query that also brings the workspace's ip_allowlist.
import type { BlockList } from 'node:net';
import { apiKeyByDigest } from '../store/api-keys.js';
import type { Sql } from '../store/db.js';
import { sessionTokenByDigest } from '../store/session-tokens.js';
import { addressList, listHas } from './addresses.js';
import { hashSecret, SESSION_TOKEN_PREFIX } from './secrets.js';

export type Auth =
  | { kind: 'api_key'; orgId: string; apiKeyId: string }
  | { kind: 'session_token'; orgId: string; tokenId: string; conversationIds: string[] | null };

export interface Credential {
  auth: Auth;
  /** The workspace's ip_allowlist; empty means every address. */
  ipAllowlist: string[];
  /** A session token's end of validity; null for API keys (valid until deleted or rotated). */
  expiresAt: Date | null;
  /** The API key that minted a session token (deleting the key deletes its tokens); null for API keys. */
  issuedByKeyId: string | null;
}

/** Resolves a bearer secret to its credential, or null when it is unknown, expired or revoked. */
export function lookupCredential(sql: Sql, secret: string, now: Date): Promise<Credential | null> {
  return lookupCredentialByDigest(sql, hashSecret(secret), secret.startsWith(SESSION_TOKEN_PREFIX), now);
}

/** lookupCredential for a secret already hashed (hashSecret): one indexed query. */
export async function lookupCredentialByDigest(
  sql: Sql,
  digest: string,
  sessionToken: boolean,
  now: Date,
): Promise<Credential | null> {
  if (sessionToken) {
    const row = await sessionTokenByDigest(sql, digest, now);
    if (!row) return null;
    return {
      auth: { kind: 'session_token', orgId: row.org_id, tokenId: row.id, conversationIds: row.conversation_ids },
      ipAllowlist: row.ip_allowlist,
      expiresAt: row.expires_at,
      issuedByKeyId: row.api_key_id,
    };
  }
  const row = await apiKeyByDigest(sql, digest);
  if (!row) return null;
  return {
    auth: { kind: 'api_key', orgId: row.org_id, apiKeyId: row.id },
    ipAllowlist: row.ip_allowlist,
    expiresAt: null,
    issuedByKeyId: null,
  };
}

/** `Authorization: Bearer <secret>` -> the secret, or null when the header is missing or of another scheme. */
export function bearerSecret(header: string | undefined): string | null {
  if (!header) return null;
  const m = /^Bearer\s+(\S+)\s*$/i.exec(header);
  return m ? m[1] : null;
}

/** Compiled allowlists, keyed by their JSON, so a request does not rebuild its workspace's BlockList. */
export class AllowlistCache {
  private readonly lists = new Map<string, BlockList>();
  private static readonly MAX_ENTRIES = 1000;

  allows(allowlist: readonly string[], address: string): boolean {
    if (allowlist.length === 0) return true;
    const key = allowlist.join(',');
    let list = this.lists.get(key);
    if (!list) {
      if (this.lists.size >= AllowlistCache.MAX_ENTRIES) this.lists.clear();
      list = addressList(allowlist);
      this.lists.set(key, list);
    }
    return listHas(list, address);
  }
}
