// What telephony needs of the media workers, as an interface: main.ts implements it over the worker pool
// (src/workers/worker-pool.ts), tests with a double. A call's media and conversation run in the worker main picks
// for it; main and that worker talk about the call in the worker protocol's telephony messages.
import type { CallMessage, CallNotice } from '../workers/worker-protocol.js';

export interface MediaWorkerListener {
  /** A worker's call_media_ready or call_ended. */
  notice(workerId: number, notice: CallNotice): void;
  /** A worker ended unexpectedly; resolves once its calls are ended (BYE sent, records finished, ports freed). */
  workerLost(workerId: number): Promise<void>;
}

export interface MediaWorkers {
  /** The running worker with the least load (conversations and calls), or null when none runs. */
  leastLoaded(): number | null;
  send(workerId: number, msg: CallMessage): void;
  /** Where the notices and losses go (one listener, set once by the SIP service). */
  listen(listener: MediaWorkerListener): void;
}
