// PostgreSQL LISTEN/NOTIFY: what other processes tell this one through the database.
import type { Sql } from './db.js';

/**
 * Subscribes to `channel`: `onPayload` for each notification, `onListening` whenever the subscription is (re)made
 * (notifications sent while it was down are lost, so a caller that caches forgets then). Resolves with the
 * unsubscribe.
 */
export async function subscribe(
  sql: Sql,
  channel: string,
  onPayload: (payload: string) => void,
  onListening: () => void,
): Promise<() => Promise<void>> {
  const { unlisten } = await sql.listen(channel, onPayload, onListening);
  return unlisten;
}
