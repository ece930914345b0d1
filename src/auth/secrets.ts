// API keys and session tokens are random secrets stored only as SHA-256 hashes: a slow password hash per request
// would cap the API, and secrets of 256 random bits need none.
import { hash, randomBytes } from 'node:crypto';

/** Bytes of randomness in every secret (256 bits). */
const SECRET_BYTES = 32;
export const API_KEY_PREFIX = 'pk_';
export const SESSION_TOKEN_PREFIX = 'st_';

/**
 * Hex SHA-256 of a secret, as stored in `api_keys.secret_hash` and `session_tokens.token_hash`. Runs once per
 * authenticated request: the one-shot `crypto.hash` costs about a third of a `createHash` object.
 */
export function hashSecret(secret: string): string {
  return hash('sha256', secret, 'hex');
}

/** A new API key secret: `pk_<base64url of 32 random bytes>`. */
export function newApiKeySecret(): string {
  return API_KEY_PREFIX + randomBytes(SECRET_BYTES).toString('base64url');
}

/** A new session token: `st_<base64url of 32 random bytes>`. */
export function newSessionTokenSecret(): string {
  return SESSION_TOKEN_PREFIX + randomBytes(SECRET_BYTES).toString('base64url');
}

/** The last characters of a secret, kept to tell keys apart in listings (never enough to guess it). */
export function secretHint(secret: string): string {
  return secret.slice(-4);
}
