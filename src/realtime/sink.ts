// Where a conversation's output goes: a WebSocket on this worker, or one on another worker reached through main
// (a relay). The backpressure policy lives here, once, for both (docs/sts-protocol.md, "Backpressure"):
// - audio stops being accepted once the socket holds AUDIO_HIGH_WATER_BYTES unsent; the conversation keeps
//   the frame in its own bounded queue and offers it again on a later tick; acceptance resumes on drain;
// - observer audio over the same mark is dropped (observers are best effort);
// - a control event that uWS had to drop (the socket holds maxBackpressure) closes the socket: a client that
//   misses events would misread the conversation, so it is cut off rather than served a broken stream.
import type { WebSocket } from './uws.js';
import { SEND_DROPPED } from './uws.js';
import type { WorkerNotice } from '../workers/worker-protocol.js';

export const BACKPRESSURE = {
  /** uWS maxBackpressure per socket: ~3 s of 44.1 kHz PCM plus events, the most one slow client can pin. */
  max_backpressure_bytes: 1024 * 1024,
  /** Audio pauses above this (~370 ms of pcm_44100, 4 s of mu-law) ... */
  audio_high_water_bytes: 32 * 1024,
  /** ... and resumes on drain below this. */
  audio_low_water_bytes: 8 * 1024,
} as const;

/** RFC 6455 7.4.1: 1008 policy violation (the client cannot keep up). */
export const CLOSE_BACKPRESSURE = 1008;

export interface FrameSink {
  /** Sends a text frame; false when it could not be (the sink closes itself then). */
  text(data: string): boolean;
  /** Sends audio unless the sink is backed up; false when not sent. */
  audio(data: Uint8Array): boolean;
  /** Whether audio would be accepted now. */
  readonly writable: boolean;
  end(code: number, reason: string): void;
  readonly closed: boolean;
}

/** Per-socket state uWS keeps for us (copied from the upgrade request). */
export interface SocketState {
  closed: boolean;
  /** Audio paused until drain (buffered above the high-water mark). */
  paused: boolean;
}

/** A FrameSink over a uWS socket of this worker; writes are corked (one syscall per burst). */
export class SocketSink implements FrameSink {
  // The message cork() sends and what uWS answered: one callback made once, so a send allocates no closure
  // (audio goes out every 20 ms per conversation).
  private pending: string | Uint8Array = '';
  private pendingBinary = false;
  private sendResult = 0;
  private readonly sendPending = (): void => {
    this.sendResult = this.ws.send(this.pending, this.pendingBinary);
  };

  constructor(
    private readonly ws: WebSocket<SocketState>,
    private readonly state: SocketState,
  ) {}

  /** Sends one message inside cork (one syscall per burst); returns uWS's SEND_* result. */
  private corkedSend(data: string | Uint8Array, binary: boolean): number {
    this.pending = data;
    this.pendingBinary = binary;
    this.ws.cork(this.sendPending);
    this.pending = '';
    return this.sendResult;
  }

  get closed(): boolean {
    return this.state.closed;
  }

  get writable(): boolean {
    if (this.state.closed || this.state.paused) return false;
    if (this.ws.getBufferedAmount() > BACKPRESSURE.audio_high_water_bytes) {
      this.state.paused = true;
      return false;
    }
    return true;
  }

  text(data: string): boolean {
    if (this.state.closed) return false;
    if (this.corkedSend(data, false) === SEND_DROPPED) {
      this.end(CLOSE_BACKPRESSURE, 'client too slow: backpressure limit reached');
      return false;
    }
    return true;
  }

  audio(data: Uint8Array): boolean {
    if (!this.writable) return false;
    return this.corkedSend(data, true) !== SEND_DROPPED;
  }

  /** uWS drain: resume audio once the socket has mostly caught up. */
  drained(): void {
    if (this.state.paused && this.ws.getBufferedAmount() < BACKPRESSURE.audio_low_water_bytes)
      this.state.paused = false;
  }

  end(code: number, reason: string): void {
    if (this.state.closed) return;
    this.state.closed = true;
    this.ws.end(code, reason);
  }
}

/**
 * A socket on another worker, reached through main: what the owner sends goes out as relay_to_socket. The
 * worker that holds the socket applies the policy to it and reports crossing the audio marks back (relay_flow):
 * audio is offered only while that report is "not paused", so a slow relayed client is paused like a local one
 * (give or take the frames already on their way) instead of filling its socket up to the drop limit.
 */
export class RelaySink implements FrameSink {
  closed = false;
  private paused = false;

  constructor(
    private readonly relayId: number,
    private readonly post: (n: WorkerNotice) => void,
    private readonly onEnd: () => void,
  ) {}

  get writable(): boolean {
    return !this.closed && !this.paused;
  }

  /** The holding worker's report (relay_flow). */
  flow(paused: boolean): void {
    this.paused = paused;
  }

  text(data: string): boolean {
    if (this.closed) return false;
    this.post({ type: 'relay_to_socket', relayId: this.relayId, data, binary: false });
    return true;
  }

  audio(data: Uint8Array): boolean {
    if (!this.writable) return false;
    this.post({ type: 'relay_to_socket', relayId: this.relayId, data: data.slice().buffer, binary: true });
    return true;
  }

  end(code: number, reason: string): void {
    if (this.closed) return;
    this.detach();
    this.post({ type: 'relay_closed', relayId: this.relayId, code, reason });
  }

  /** The relay closed from the socket's side: nothing more goes out. */
  detach(): void {
    this.closed = true;
    this.onEnd();
  }
}

/** A socket that dropped and may come back (reconnect grace): nothing is sent meanwhile. */
export const DETACHED: FrameSink = {
  text: () => false,
  audio: () => false,
  writable: false,
  end: () => undefined,
  closed: true,
};
