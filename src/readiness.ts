// Whether this node serves: set once every listener accepts connections (the control plane and the realtime port),
// cleared when it starts shutting down. src/main.ts owns the node's one Readiness; a readiness probe reads it.
export class Readiness {
  private isReady = false;
  private resolveReady!: () => void;
  /** Resolves once the node is ready (never, when start-up fails). */
  readonly whenReady: Promise<void> = new Promise((r) => (this.resolveReady = r));

  get ready(): boolean {
    return this.isReady;
  }

  /** Every listener accepts: the node serves from now on. */
  markReady(): void {
    this.isReady = true;
    this.resolveReady();
  }

  /** Shutting down: no longer ready (whenReady stays resolved). */
  markStopping(): void {
    this.isReady = false;
  }
}

/** This process's readiness (src/main.ts marks it). */
export const nodeReadiness = new Readiness();
