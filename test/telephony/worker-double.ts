// Test double of the media-worker side of telephony, at the SIP service's MediaWorkers interface: it records every
// message main sends, answers call_assigned with call_media_ready (or not, or a refusal), answers call_hangup with
// call_ended, and, like a real worker, creates a call's record at call_start and finishes it when the call ends
// (through the store, as main's request handler would for the worker). Scaffolding for tests, not a media worker.
import type { Sql } from '../../src/store/db.js';
import { createConversation, finishConversation } from '../../src/store/conversations.js';
import type { MediaWorkerListener, MediaWorkers } from '../../src/telephony/media-workers.js';
import type { CallMessage, CallNotice } from '../../src/workers/worker-protocol.js';
import type { EndedBy } from '../../src/schemas/conversations.js';

export type Assigned = Extract<CallMessage, { type: 'call_assigned' }>;
/** How call_assigned is answered: at once, never ('silent'), or when the test says so ('held': answerMedia). */
export type MediaAnswer = { ok: true } | { ok: false; error: string } | 'silent' | 'held';

const WAIT_MS = 15_000;

export class WorkerDouble implements MediaWorkers {
  readonly sent: { workerId: number; msg: CallMessage }[] = [];
  readonly assigned = new Map<string, Assigned>();
  /** Calls the double holds (assigned and not ended), by call id. */
  readonly holding = new Map<string, number>();
  readonly started = new Set<string>();
  /** How the next call_assigned is answered; ok by default. */
  mediaAnswer: (msg: Assigned) => MediaAnswer = () => ({ ok: true });
  #listener: MediaWorkerListener | null = null;
  readonly #held = new Map<string, number>();
  #endsPaused = false;
  readonly #pausedEnds: (() => Promise<void>)[] = [];
  readonly #alive: Set<number>;
  readonly #waiters: (() => void)[] = [];

  constructor(
    private readonly sql: Sql,
    workers = 1,
  ) {
    this.#alive = new Set(Array.from({ length: workers }, (_, i) => i));
  }

  leastLoaded(): number | null {
    let best: number | null = null;
    let bestLoad = Infinity;
    for (const id of this.#alive) {
      const load = [...this.holding.values()].filter((w) => w === id).length;
      if (load < bestLoad) {
        best = id;
        bestLoad = load;
      }
    }
    return best;
  }

  listen(listener: MediaWorkerListener): void {
    this.#listener = listener;
  }

  send(workerId: number, msg: CallMessage): void {
    if (!this.#alive.has(workerId)) return;
    this.sent.push({ workerId, msg });
    for (const w of this.#waiters.splice(0)) w();
    switch (msg.type) {
      case 'call_assigned': {
        const answer = this.mediaAnswer(msg);
        if (answer === 'silent') return;
        this.assigned.set(msg.callId, msg);
        if (answer === 'held') {
          this.#held.set(msg.callId, workerId);
          return;
        }
        if (answer.ok) this.holding.set(msg.callId, workerId);
        setImmediate(() => this.#notice(workerId, { type: 'call_media_ready', callId: msg.callId, ...answer }));
        return;
      }
      case 'call_start': {
        this.started.add(msg.callId);
        const a = this.assigned.get(msg.callId);
        if (!a) return;
        void createConversation(this.sql, {
          id: a.conversationId,
          orgId: a.agent.orgId,
          projectId: a.agent.project.id,
          agent: { id: a.agent.agent.id, name: a.agent.agent.name },
          origin: a.origin,
          state: 'active',
          call_info: a.callInfo,
          started_at: new Date(),
        });
        return;
      }
      case 'call_hangup': {
        const endedBy: EndedBy = msg.reason === 'bye' || msg.reason === 'cancel' ? 'user' : 'error';
        if (this.#endsPaused) this.#pausedEnds.push(() => this.end(msg.callId, endedBy));
        else setImmediate(() => void this.end(msg.callId, endedBy));
        return;
      }
      default:
        return;
    }
  }

  /** call_hangup is not answered until resumeEnds() (a worker still saving its calls). */
  pauseEnds(): void {
    this.#endsPaused = true;
  }

  async resumeEnds(): Promise<void> {
    this.#endsPaused = false;
    for (const end of this.#pausedEnds.splice(0)) await end();
  }

  /** Answers a call_assigned held back ('held'): the ports are bound. */
  answerMedia(callId: string): void {
    const workerId = this.#held.get(callId);
    if (workerId === undefined) throw new Error(`no call_assigned ${callId} is held`);
    this.#held.delete(callId);
    this.holding.set(callId, workerId);
    this.#notice(workerId, { type: 'call_media_ready', callId, ok: true });
  }

  /** The conversation ends in the worker: its record finished (when started), then call_ended. */
  async end(callId: string, endedBy: EndedBy = 'assistant'): Promise<void> {
    const workerId = this.holding.get(callId);
    const a = this.assigned.get(callId);
    if (workerId === undefined || !a) return;
    this.holding.delete(callId);
    const started = this.started.has(callId);
    if (started) await finishConversation(this.sql, a.conversationId, { ended_by: endedBy, ended_at: new Date() });
    this.#notice(workerId, { type: 'call_ended', callId, conversationId: a.conversationId, endedBy, started });
  }

  /** The worker dies: it sends nothing more, and main is told. */
  async crash(workerId: number): Promise<void> {
    this.#alive.delete(workerId);
    for (const [callId, w] of this.holding) if (w === workerId) this.holding.delete(callId);
    await this.#listener?.workerLost(workerId);
  }

  /** The messages of one type sent so far. */
  of<T extends CallMessage['type']>(type: T): Extract<CallMessage, { type: T }>[] {
    return this.sent.map((s) => s.msg).filter((m): m is Extract<CallMessage, { type: T }> => m.type === type);
  }

  /** Resolves with the first message main sent that `match` accepts (waiting for it; bounded). */
  async until<T extends CallMessage['type']>(
    type: T,
    match: (m: Extract<CallMessage, { type: T }>) => boolean = () => true,
  ): Promise<Extract<CallMessage, { type: T }>> {
    const deadline = Date.now() + WAIT_MS;
    for (;;) {
      const hit = this.of(type).find(match);
      if (hit) return hit;
      if (Date.now() > deadline)
        throw new Error(`no ${type} within ${WAIT_MS} ms; sent: ${JSON.stringify(this.sent.map((s) => s.msg.type))}`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, 200);
        this.#waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
  }

  #notice(workerId: number, notice: CallNotice): void {
    if (this.#alive.has(workerId)) this.#listener?.notice(workerId, notice);
  }
}
