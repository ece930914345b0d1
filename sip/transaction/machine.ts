// What the four transaction kinds share: an input queue driving a pure transition function (inputs that
// arrive while actions run are queued, never re-entered), named timers on the injected clock, termination.
import type { Clock } from './clock.js';
import type { Step } from './client-invite.fsm.js';
import { TimerSet, type TimerName, type TimerValues } from './timers.js';
import type { PreparedRequest } from '../transport/transport.js';
import type { SipResponse } from '../message/types.js';
import type { Source, Target } from '../transport/types.js';
import type { SipRequest } from '../message/types.js';

/** What a transaction needs from the transport (SipTransport provides it). */
export interface TransactionTransport {
  prepareRequest(req: SipRequest, target: Target): PreparedRequest;
  sendBytes(bytes: Buffer, target: Target): Promise<void>;
  sendResponseBytes(bytes: Buffer, res: SipResponse, source?: Source): Promise<void>;
  /**
   * Keeps the TCP connection to or from `at` open until the returned release is called (RFC 3261 18.1.1,
   * 18.2.2: a transaction completes over the connection it began on). No-op for UDP.
   */
  holdConnection?(at: Source | Target): () => void;
}

/** What the transaction layer gives each transaction. */
export interface TransactionContext {
  transport: TransactionTransport;
  clock: Clock;
  timers: TimerValues;
  /** Called once when the transaction reaches Terminated (the layer forgets it). */
  terminated(key: string): void;
}

export abstract class Machine<S extends string, I extends string, A> {
  private readonly queue: I[] = [];
  private busy = false;
  private releaseConnection: (() => void) | undefined;
  protected readonly timerSet: TimerSet<TimerName>;

  protected constructor(
    public state: S,
    readonly key: string,
    protected readonly ctx: TransactionContext,
  ) {
    this.timerSet = new TimerSet<TimerName>(ctx.clock, (name) => this.input(`timer_${name.toLowerCase()}` as I));
  }

  protected abstract transition(state: S, input: I): Step<S, A> | null;
  protected abstract execute(action: A): void;
  /** Called after the state became Terminated, once. */
  protected abstract onTerminated(): void;

  /** Feed one input (a timer, a message, a TU event, a transport error). Ignored inputs are absorbed. */
  input(input: I): void {
    this.queue.push(input);
    if (this.busy) return;
    this.busy = true;
    try {
      while (this.queue.length > 0) {
        const next = this.queue.shift()!;
        if ((this.state as string) === 'terminated') continue;
        const step = this.transition(this.state, next);
        if (step === null) continue;
        this.state = step.next;
        for (const action of step.actions) this.execute(action);
        if ((this.state as string) === 'terminated') {
          this.timerSet.cancelAll();
          this.releaseConnection?.();
          this.releaseConnection = undefined;
          this.ctx.terminated(this.key);
          this.onTerminated();
        }
      }
    } finally {
      this.busy = false;
    }
  }

  /** Keeps the connection the transaction uses open until it terminates (TransactionTransport.holdConnection). */
  protected holdConnection(at: Source | Target): void {
    this.releaseConnection ??= this.ctx.transport.holdConnection?.(at);
  }

  /** Start a timer; a 0 duration (reliable transports, RFC 3261 17) fires at once, in order. */
  protected startTimer(name: TimerName, ms: number): void {
    if (ms <= 0) this.queue.push(`timer_${name.toLowerCase()}` as I);
    else this.timerSet.start(name, ms);
  }

  get terminated(): boolean {
    return (this.state as string) === 'terminated';
  }
}
