// Signed, expiring links (voice samples, conversation audio): HMAC-SHA256 over the path and the expiry.
// The secret is PARLEY_SIGNING_SECRET, or one generated once and kept in the `settings` table.
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Sql } from '../store/db.js';
import { settingOrInsert } from '../store/settings.js';

/** Key of the generated secret in the `settings` table. */
const SECRET_SETTING = 'signing_secret';

export interface UrlSigner {
  /** `path` (starting with `/`) plus `?expires=<unix s>&sig=<hex>`, valid for `ttlSeconds` from `now`. */
  sign(path: string, ttlSeconds: number, now: Date): string;
  /** Whether a path's `expires` and `sig` query values are genuine and not past at `now`. */
  verify(path: string, expires: string | undefined, sig: string | undefined, now: Date): boolean;
}

export function createSigner(secret: string): UrlSigner {
  const mac = (path: string, expires: string) =>
    createHmac('sha256', secret).update(`${path}\n${expires}`).digest('hex');
  return {
    sign(path, ttlSeconds, now) {
      const expires = String(Math.floor(now.getTime() / 1000) + ttlSeconds);
      const sep = path.includes('?') ? '&' : '?';
      return `${path}${sep}expires=${expires}&sig=${mac(path, expires)}`;
    },
    verify(path, expires, sig, now) {
      if (!expires || !sig || !/^\d{1,12}$/.test(expires) || !/^[0-9a-f]{64}$/.test(sig)) return false;
      if (Number(expires) * 1000 <= now.getTime()) return false;
      return timingSafeEqual(Buffer.from(mac(path, expires), 'hex'), Buffer.from(sig, 'hex'));
    },
  };
}

/** The signing secret: the setting when given, else the stored one, generated and stored on first use. */
export async function loadSigningSecret(sql: Sql, configured: string | undefined): Promise<string> {
  if (configured) return configured;
  return settingOrInsert(sql, SECRET_SETTING, randomBytes(32).toString('hex'));
}
