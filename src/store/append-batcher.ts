// Item appends of all live conversations, coalesced: the first append to arrive waits up to `window_ms` for
// others, and they go to the database together as ONE statement (appendItemsBatch). A round trip costs main far
// more than the rows it carries (bench/items.ts: ~460 us of main-thread CPU for a bare `select 1` against ~100 us
// for an append's own work), so a batch of k appends costs main about one k-th of the round trips.
// One batch is in flight at a time: appends arriving meanwhile wait for it and form the next batch, so a slow
// database gets bigger batches instead of more concurrent statements, and appends to one conversation are
// written in the order they arrived.
// A batch either lands whole or not at all. When the database refuses its rows, the cause is one append's rows (a
// constraint, a bad value), so each append is then retried on its own, one after another in arrival order, and
// only the ones that fail again reject: every caller learns its own outcome, never another's.
// When the database is unavailable (unreachable, the connection lost: src/store/db.ts isDatabaseUnavailable), the
// batch is held: put back at the head of the queue and sent again after a backoff, the appends behind it still in
// order. The statement may have committed before its connection was lost; sending it again writes nothing twice,
// because every item carries the id given to it on arrival and appendItemsBatch skips the ids it holds already.
// The hold is bounded (APPEND_HOLD_DEFAULTS): an append waits at most `max_hold_ms` from its arrival, and while
// appends are held no more than `max_held_items` items wait; past either bound an append fails with the database's
// error (the caller learns that it was not stored) instead of growing main's memory for as long as the outage lasts.
import { performance } from 'node:perf_hooks';
import postgres from 'postgres';
import type { Logger } from '../log.js';
import { isDatabaseUnavailable, type Sql } from './db.js';
import { appendItemsBatch, type Append, type NewItem } from './conversations.js';
import { newId } from './ids.js';

export const APPEND_BATCH_DEFAULTS = {
  /**
   * How long the oldest waiting append waits for others to join its batch. bench/items.ts at 100 items/s from 250
   * conversations, main-thread CPU per item (medians of 3 interleaved runs) for windows 0/10/25/50 ms:
   * 893/763/485/336 us, append latency p50 6/15/21/36 ms. Only the record's finish waits on an append.
   */
  window_ms: 50,
  /** Items per statement at most; more wait for the next one. */
  max_items: 500,
} as const;

export type AppendBatchOptions = { [K in keyof typeof APPEND_BATCH_DEFAULTS]: number };

/** How appends are held while the database is unavailable (the file's header). */
export const APPEND_HOLD_DEFAULTS = {
  /** An append is held at most this long from its arrival; then it fails. */
  max_hold_ms: 60_000,
  /** Items held at most while the database is unavailable; appends beyond them fail at once. */
  max_held_items: 50_000,
  /** The first wait before a held batch is sent again, doubled per failure up to retry_max_ms. */
  retry_min_ms: 100,
  retry_max_ms: 2_000,
} as const;

export type AppendHoldOptions = { [K in keyof typeof APPEND_HOLD_DEFAULTS]: number };

interface Waiting {
  append: Append;
  /** When it arrived (performance.now()). */
  at: number;
  resolve(ids: string[]): void;
  reject(err: unknown): void;
}

/** Gives every item an id before its first attempt, so an append sent again names the same items. */
function withIds(items: NewItem[]): NewItem[] {
  return items.every((i) => i.id !== undefined)
    ? items
    : items.map((i) => (i.id === undefined ? { ...i, id: newId('conv_item') } : i));
}

/** SQLSTATE classes of a statement refused for its rows (PostgreSQL docs, Appendix A): it did not run. */
const ROW_ERROR_CLASSES = new Set(['22', '23']); // data exception, integrity constraint violation

/**
 * Whether a failed batch may be retried append by append: the database refused its rows, or building them threw
 * before anything was sent (such errors carry no `code`; postgres.js's connection errors do).
 */
function refusedRows(err: unknown): boolean {
  if (err instanceof postgres.PostgresError) return ROW_ERROR_CLASSES.has(err.code.slice(0, 2));
  return !(err instanceof Error && 'code' in err);
}

export class AppendBatcher {
  private queue: Waiting[] = [];
  private queuedItems = 0;
  private timer: NodeJS.Timeout | null = null;
  private inFlight: Promise<void> | null = null;
  /** The database is unavailable: held appends wait until this time (performance.now()) before they go again. */
  private resumeAt = 0;
  private retryDelayMs: number;
  /** The error that made appends wait; null while the database answers. */
  private unavailable: unknown = null;
  /** Appends not yet settled, per conversation, and who waits for them (settled()). */
  private readonly pending = new Map<string, number>();
  private readonly settledWaiters = new Map<string, (() => void)[]>();
  private idleWaiters: (() => void)[] = [];
  /**
   * Statements sent, appends written through them, batches that failed and were retried append by append, and
   * batches held while the database was unavailable (each hold counted once per failed attempt).
   */
  readonly stats = { statements: 0, appends: 0, retriedBatches: 0, heldBatches: 0 };

  constructor(
    private readonly sql: Sql,
    private readonly log: Logger,
    private readonly opts: AppendBatchOptions = APPEND_BATCH_DEFAULTS,
    private readonly hold: AppendHoldOptions = APPEND_HOLD_DEFAULTS,
  ) {
    this.retryDelayMs = hold.retry_min_ms;
  }

  /** Appends `items` after the conversation's last item, all or nothing; resolves with their ids. */
  append(conversationId: string, items: NewItem[]): Promise<string[]> {
    if (this.unavailable !== null && this.queuedItems + items.length > this.hold.max_held_items) {
      this.log.error(
        { conversationId, items: items.length, held: this.queuedItems },
        'store: the database is unavailable and the held appends are at their bound: an append fails',
      );
      // eslint-disable-next-line @typescript-eslint/prefer-promise-reject-errors -- the database's own error, passed on
      return Promise.reject(this.unavailable);
    }
    this.pending.set(conversationId, (this.pending.get(conversationId) ?? 0) + 1);
    const done = () => this.settledOne(conversationId);
    return new Promise<string[]>((resolve, reject) => {
      this.queue.push({
        append: { conversationId, items: withIds(items) },
        at: performance.now(),
        resolve: (ids) => {
          done();
          resolve(ids);
        },
        reject: (err) => {
          done();
          reject(err);
        },
      });
      this.queuedItems += items.length;
      this.schedule();
    });
  }

  /** Resolves once every append of `conversationId` made so far has been written or has failed. */
  settled(conversationId: string): Promise<void> {
    if (!this.pending.has(conversationId)) return Promise.resolve();
    return new Promise((resolve) => {
      const list = this.settledWaiters.get(conversationId);
      if (list) list.push(resolve);
      else this.settledWaiters.set(conversationId, [resolve]);
    });
  }

  private settledOne(conversationId: string): void {
    const n = (this.pending.get(conversationId) ?? 1) - 1;
    if (n > 0) return void this.pending.set(conversationId, n);
    this.pending.delete(conversationId);
    const waiters = this.settledWaiters.get(conversationId);
    if (!waiters) return;
    this.settledWaiters.delete(conversationId);
    for (const w of waiters) w();
  }

  /**
   * Resolves once every append made so far has been written (or has failed); what waits out its window goes now.
   * Appends held through an outage are not hurried: they go at their next try.
   */
  async flush(): Promise<void> {
    if (this.timer && this.resumeAt <= performance.now()) {
      clearTimeout(this.timer);
      this.timer = null;
      this.send();
    }
    if (this.queue.length === 0 && !this.inFlight) return;
    await new Promise<void>((resolve) => this.idleWaiters.push(resolve));
  }

  private schedule(): void {
    // A batch in flight takes the queue's next batch when it ends.
    if (this.inFlight) return;
    if (this.queue.length === 0) {
      const waiters = this.idleWaiters;
      this.idleWaiters = [];
      for (const w of waiters) w();
      return;
    }
    const now = performance.now();
    const full = this.queuedItems >= this.opts.max_items;
    if (this.timer) {
      if (!full || this.resumeAt > now) return;
      clearTimeout(this.timer);
      this.timer = null;
    }
    const wait = Math.max(full ? 0 : this.queue[0].at + this.opts.window_ms - now, this.resumeAt - now);
    if (wait <= 0) {
      this.send();
      return;
    }
    this.timer = setTimeout(() => {
      this.timer = null;
      this.send();
    }, wait);
  }

  private send(): void {
    let n = 0;
    let items = 0;
    // At least one append, however many items it has.
    while (n < this.queue.length && (n === 0 || items + this.queue[n].append.items.length <= this.opts.max_items)) {
      items += this.queue[n].append.items.length;
      n++;
    }
    const batch = this.queue.splice(0, n);
    this.queuedItems -= items;
    this.inFlight = this.write(batch).finally(() => {
      this.inFlight = null;
      this.schedule();
    });
  }

  private async write(batch: Waiting[]): Promise<void> {
    this.stats.statements++;
    this.stats.appends += batch.length;
    let results: Awaited<ReturnType<typeof appendItemsBatch>>;
    try {
      results = await appendItemsBatch(
        this.sql,
        batch.map((w) => w.append),
      );
    } catch (err) {
      if (isDatabaseUnavailable(err)) return this.held(batch, err);
      if (batch.length === 1 || !refusedRows(err)) {
        for (const w of batch) w.reject(err);
        return;
      }
      this.stats.retriedBatches++;
      this.log.warn({ err, appends: batch.length }, 'store: a batch of item appends failed; retrying them one by one');
      for (const w of batch) await this.write([w]);
      return;
    }
    if (this.unavailable !== null) {
      this.log.info('store: the database answers again: held appends written');
      this.unavailable = null;
    }
    this.retryDelayMs = this.hold.retry_min_ms;
    this.resumeAt = 0;
    for (const [i, r] of results.entries()) {
      if (r instanceof Error) batch[i].reject(r);
      else batch[i].resolve(r);
    }
  }

  /**
   * The database is unavailable: the batch goes back to the head of the queue, to be sent again after the backoff;
   * appends held longer than max_hold_ms fail instead.
   */
  private held(batch: Waiting[], err: unknown): void {
    this.stats.heldBatches++;
    if (this.unavailable === null)
      this.log.warn({ err }, 'store: the database is unavailable: holding item appends and trying again');
    this.unavailable = err;
    const now = performance.now();
    const kept: Waiting[] = [];
    for (const w of batch) {
      if (now - w.at < this.hold.max_hold_ms) kept.push(w);
      else w.reject(err);
    }
    // The queue behind the batch is older than any timer's window: it goes together with the batch when it resumes.
    for (let i = this.queue.length - 1; i >= 0; i--) {
      const w = this.queue[i];
      if (now - w.at < this.hold.max_hold_ms) continue;
      this.queue.splice(i, 1);
      this.queuedItems -= w.append.items.length;
      w.reject(err);
    }
    if (kept.length < batch.length) {
      this.log.error(
        { err, failed: batch.length - kept.length },
        `store: item appends held for ${this.hold.max_hold_ms} ms failed: the database stayed unavailable`,
      );
    }
    this.queue.unshift(...kept);
    for (const w of kept) this.queuedItems += w.append.items.length;
    this.resumeAt = now + this.retryDelayMs;
    this.retryDelayMs = Math.min(this.retryDelayMs * 2, this.hold.retry_max_ms);
  }
}
