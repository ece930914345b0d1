// Item appends of all live conversations, coalesced: the first append to arrive waits up to `window_ms` for
// others, and they go to the database together as ONE statement (appendItemsBatch). A round trip costs main far
// more than the rows it carries (bench/items.ts: ~460 us of main-thread CPU for a bare `select 1` against ~100 us
// for an append's own work), so a batch of k appends costs main about one k-th of the round trips.
// One batch is in flight at a time: appends arriving meanwhile wait for it and form the next batch, so a slow
// database gets bigger batches instead of more concurrent statements, and appends to one conversation are
// written in the order they arrived.
// A batch either lands whole or not at all. When the database refuses its rows, the cause is one append's rows (a
// constraint, a bad value), so each append is then retried on its own, one after another in arrival order, and
// only the ones that fail again reject: every caller learns its own outcome, never another's. Any other failure (a
// lost connection, after which the statement may have committed) rejects the whole batch instead of risking an
// append written twice.
import { performance } from 'node:perf_hooks';
import postgres from 'postgres';
import type { Logger } from '../log.js';
import type { Sql } from './db.js';
import { appendItemsBatch, type Append, type NewItem } from './conversations.js';

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

interface Waiting {
  append: Append;
  /** When it arrived (performance.now()). */
  at: number;
  resolve(ids: string[]): void;
  reject(err: unknown): void;
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
  /** Statements sent, appends written through them, and batches that failed and were retried append by append. */
  readonly stats = { statements: 0, appends: 0, retriedBatches: 0 };

  constructor(
    private readonly sql: Sql,
    private readonly log: Logger,
    private readonly opts: AppendBatchOptions = APPEND_BATCH_DEFAULTS,
  ) {}

  /** Appends `items` after the conversation's last item, all or nothing; resolves with their ids. */
  append(conversationId: string, items: NewItem[]): Promise<string[]> {
    return new Promise<string[]>((resolve, reject) => {
      this.queue.push({ append: { conversationId, items }, at: performance.now(), resolve, reject });
      this.queuedItems += items.length;
      this.schedule();
    });
  }

  /** Resolves once every append made so far has been written (or has failed). */
  async flush(): Promise<void> {
    while (this.queue.length > 0 || this.inFlight) {
      if (this.timer) {
        clearTimeout(this.timer);
        this.timer = null;
        this.send();
      }
      await this.inFlight;
    }
  }

  private schedule(): void {
    // A batch in flight takes the queue's next batch when it ends.
    if (this.inFlight || this.queue.length === 0) return;
    const full = this.queuedItems >= this.opts.max_items;
    if (this.timer) {
      if (!full) return;
      clearTimeout(this.timer);
      this.timer = null;
    }
    const wait = full ? 0 : this.queue[0].at + this.opts.window_ms - performance.now();
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
      results = await appendItemsBatch(this.sql, batch.map((w) => w.append));
    } catch (err) {
      if (batch.length === 1 || !refusedRows(err)) {
        for (const w of batch) w.reject(err);
        return;
      }
      this.stats.retriedBatches++;
      this.log.warn({ err, appends: batch.length }, 'store: a batch of item appends failed; retrying them one by one');
      for (const w of batch) await this.write([w]);
      return;
    }
    for (const [i, r] of results.entries()) {
      if (r instanceof Error) batch[i].reject(r);
      else batch[i].resolve(r);
    }
  }
}
