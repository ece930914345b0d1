// What every route plugin is given: the domain's context (database, settings, clock) plus a logger, link helpers,
// the credential cache and, where the node runs SIP, the outbound calls service.
import type { Settings } from '../config.js';
import type { DomainContext } from '../domain/context.js';
import type { OutboundCalls } from '../domain/outbound-calls.js';
import type { Logger } from '../log.js';
import type { Sql } from '../store/db.js';
import { CredentialCache } from '../auth/credential-cache.js';
import { createSigner, loadSigningSecret, type UrlSigner } from '../auth/signed-url.js';
import { nodeReadiness, type Readiness } from '../readiness.js';

export interface AppContext extends DomainContext {
  log: Logger;
  /** Base of links handed out, without a trailing slash: PARLEY_PUBLIC_URL, else the listening address. */
  publicUrl(): string;
  /** Signs and verifies expiring links (`audio_url`). */
  signer: UrlSigner;
  /** Which database: embedded PGlite (one connection) or PostgreSQL (a pool). */
  storeKind: 'pglite' | 'postgres';
  /** Verified API keys and session tokens, kept briefly; routes that revoke one forget it before answering. */
  credentials: CredentialCache;
  /** Places phone calls: set by src/main.ts once the SIP service runs; null on a control plane without one. */
  outboundCalls: OutboundCalls | null;
  /** The node's state as /readyz reports it (src/readiness.ts); src/main.ts marks it. */
  readiness: Readiness;
}

/** The context of a control plane on `store`, listening (once started) at `listening()`. */
export async function createContext(
  settings: Settings,
  store: { sql: Sql; kind: 'pglite' | 'postgres' },
  log: Logger,
  listening: () => string,
): Promise<AppContext> {
  const signer = createSigner(await loadSigningSecret(store.sql, settings.PARLEY_SIGNING_SECRET));
  const configured = settings.PARLEY_PUBLIC_URL?.replace(/\/+$/, '');
  const credentials = new CredentialCache(store.sql);
  if (store.kind === 'postgres') await credentials.listen();
  return {
    settings,
    sql: store.sql,
    log,
    now: () => new Date(),
    publicUrl: () => configured ?? listening(),
    signer,
    storeKind: store.kind,
    credentials,
    outboundCalls: null,
    readiness: nodeReadiness,
  };
}
