// PostgreSQL LISTEN/NOTIFY: what other processes tell this one through the database.
import type { Sql } from './db.js';

/**
 * Subscribes to `channel`: `onPayload` for each notification, `onListening` whenever the subscription is (re)made
 * (notifications sent while it was down are lost, so a caller that caches forgets then).
 */
export async function subscribe(sql: Sql, channel: string, onPayload: (payload: string) => void, onListening: () => void): Promise<void> {
  await sql.listen(channel, onPayload, onListening);
}
