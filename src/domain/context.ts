// What every domain operation runs against: the database, the node's settings and the clock. The control plane's
// context extends it, so its identity also keys per-server state (the agent write locks).
import type { Settings } from '../config.js';
import type { Sql } from '../store/db.js';

export interface DomainContext {
  sql: Sql;
  settings: Settings;
  /** The clock (injected so tests can move time). */
  now(): Date;
}
