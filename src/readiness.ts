// Whether this node serves (docs/operations.md, "Health and readiness"): `starting` until every listener accepts
// connections (the control plane, the realtime port, SIP), `ready` then, `draining` from the first SIGTERM (nothing
// new is admitted, live conversations finish), `stopping` once it ends what is left. src/main.ts owns the node's one
// Readiness; /readyz reads it (with the database's reachability).
export type NodeState = 'starting' | 'ready' | 'draining' | 'stopping';

export class Readiness {
  private current: NodeState = 'starting';
  private resolveReady!: () => void;
  /** Resolves once the node is ready (never, when start-up fails). */
  readonly whenReady: Promise<void> = new Promise((r) => (this.resolveReady = r));

  get state(): NodeState {
    return this.current;
  }

  get ready(): boolean {
    return this.current === 'ready';
  }

  /** Past the first SIGTERM: admitting nothing new (draining, then stopping). */
  get draining(): boolean {
    return this.current === 'draining' || this.current === 'stopping';
  }

  /** Every listener accepts: the node serves from now on (unless it began draining meanwhile). */
  markReady(): void {
    if (this.current === 'starting') this.current = 'ready';
    this.resolveReady();
  }

  /** SIGTERM: no longer ready; live conversations go on. */
  markDraining(): void {
    if (this.current === 'starting' || this.current === 'ready') this.current = 'draining';
  }

  /** Shutting down: what is left is being ended (whenReady stays resolved). */
  markStopping(): void {
    this.current = 'stopping';
  }
}

/** This process's readiness (src/main.ts marks it). */
export const nodeReadiness = new Readiness();
