// Verified credentials kept briefly, so an authenticated request does not cost a database round trip (the round
// trip would cost more than the reads it guards). Entries are keyed by the SHA-256 of the secret, the digest the
// database stores: the secret itself is never kept.
//
// When a change takes effect:
// - on this node, at once: the routes that delete or rotate a key or change a workspace's ip_allowlist call
//   forget* before they answer;
// - on other nodes and after the admin command: triggers (migration 20261122000300_auth_notify.sql) NOTIFY
//   AUTH_CHANNEL with what changed, and every PostgreSQL node LISTENs and forgets it. A listener that
//   (re)connects forgets everything, since notifications may have been missed meanwhile;
// - in every case within ENTRY_TTL_MS, and never after a session token's expires_at.
// A lookup that raced a change (its query began before a forget) is answered but not cached.
import type { Sql } from '../store/db.js';
import { subscribe } from '../store/notifications.js';
import { lookupCredentialByDigest, type Credential } from './authenticate.js';
import { hashSecret, SESSION_TOKEN_PREFIX } from './secrets.js';

/** NOTIFY channel of credential changes; payloads `api_key:<id>`, `session_token:<id>`, `workspace:<id>`. */
export const AUTH_CHANNEL = 'parley_auth';

/** How long a verified credential is believed without asking the database again. */
export const ENTRY_TTL_MS = 5_000;
/** Entries kept at most (the oldest goes first); a workspace has few keys, so this is many workspaces. */
const MAX_ENTRIES = 10_000;

interface Entry {
  credential: Credential;
  /** Monotonic time (performance.now) after which the entry is looked up again. */
  staleAtMs: number;
  /** Epoch ms of a session token's expires_at (compared with the injected clock), Infinity for keys. */
  expiresAtMs: number;
}

export class CredentialCache {
  private readonly entries = new Map<string, Entry>();
  /** Bumped by every forget: a lookup whose query began under an older generation is not cached. */
  private generation = 0;

  private readonly ttlMs: number;

  constructor(
    private readonly sql: Sql,
    opts: { ttlMs?: number } = {},
  ) {
    this.ttlMs = opts.ttlMs ?? ENTRY_TTL_MS;
  }

  /** The credential of a bearer secret, or null when it is unknown, expired or revoked. */
  async lookup(secret: string, now: Date): Promise<Credential | null> {
    const digest = hashSecret(secret);
    const hit = this.entries.get(digest);
    if (hit) {
      if (hit.staleAtMs > performance.now() && hit.expiresAtMs > now.getTime()) return hit.credential;
      this.entries.delete(digest);
    }
    const generation = this.generation;
    const credential = await lookupCredentialByDigest(this.sql, digest, secret.startsWith(SESSION_TOKEN_PREFIX), now);
    if (credential && generation === this.generation) {
      if (this.entries.size >= MAX_ENTRIES) this.entries.delete(this.entries.keys().next().value!);
      freeze(credential);
      this.entries.set(digest, {
        credential,
        staleAtMs: performance.now() + this.ttlMs,
        expiresAtMs: credential.expiresAt ? credential.expiresAt.getTime() : Infinity,
      });
    }
    return credential;
  }

  /** An API key was deleted or rotated: forget it and the session tokens it minted. */
  forgetApiKey(id: string): void {
    this.forgetWhere((c) => (c.auth.kind === 'api_key' && c.auth.apiKeyId === id) || c.issuedByKeyId === id);
  }

  forgetSessionToken(id: string): void {
    this.forgetWhere((c) => c.auth.kind === 'session_token' && c.auth.tokenId === id);
  }

  /** A workspace's ip_allowlist changed or the workspace went: forget all its credentials. */
  forgetWorkspace(orgId: string): void {
    this.forgetWhere((c) => c.auth.orgId === orgId);
  }

  clear(): void {
    this.generation++;
    this.entries.clear();
  }

  /** Applies a notification of AUTH_CHANNEL; an unknown payload forgets everything. */
  applyNotification(payload: string): void {
    const colon = payload.indexOf(':');
    const kind = payload.slice(0, colon);
    const id = payload.slice(colon + 1);
    if (colon > 0 && kind === 'api_key') this.forgetApiKey(id);
    else if (colon > 0 && kind === 'session_token') this.forgetSessionToken(id);
    else if (colon > 0 && kind === 'workspace') this.forgetWorkspace(id);
    else this.clear();
  }

  /**
   * Subscribes to changes made by other processes (PostgreSQL only: LISTEN does not cross the embedded
   * database's socket, and no other process opens that database while this one holds it).
   */
  async listen(): Promise<void> {
    await subscribe(
      this.sql,
      AUTH_CHANNEL,
      (payload) => this.applyNotification(payload),
      () => this.clear(),
    );
  }

  private forgetWhere(matches: (c: Credential) => boolean): void {
    this.generation++;
    for (const [digest, entry] of this.entries) if (matches(entry.credential)) this.entries.delete(digest);
  }
}

/** Cached credentials are shared by every request that presents the secret: none may change one. */
function freeze(credential: Credential): void {
  Object.freeze(credential.ipAllowlist);
  if (credential.auth.kind === 'session_token' && credential.auth.conversationIds)
    Object.freeze(credential.auth.conversationIds);
  Object.freeze(credential.auth);
  Object.freeze(credential);
}
