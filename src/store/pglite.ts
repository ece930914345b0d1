// Main-thread handle on the store thread: starts PGlite in a worker and reports the port of its socket server.
import { Worker } from 'node:worker_threads';
import type { StoreThreadOptions, StoreThreadReply, StoreThreadRequest } from './pglite-thread.js';
import { StoreError } from './errors.js';

export interface PgliteThread {
  /** TCP port on 127.0.0.1 of the PGlite socket server (one connection only). */
  readonly port: number;
  /** Writes the whole database as a gzipped tarball (for loadFrom). */
  dump(path: string): Promise<void>;
  close(): Promise<void>;
}

const THREAD_URL = new URL('./pglite-thread.ts', import.meta.url);
// Node 20 does not apply the parent's `--import tsx` hooks to a worker's entry module, so the worker
// registers tsx itself before importing the TypeScript entry.
const BOOT = `import('tsx/esm/api').then((tsx) => { tsx.register(); return import(${JSON.stringify(THREAD_URL.href)}); })`;

/**
 * Starts the store thread. `onLost` is called if the thread ends while the store is open (every query fails
 * from then on), so the caller can stop the node instead of answering 500s.
 */
export function startPgliteThread(
  options: StoreThreadOptions,
  onLost: (err: StoreError) => void = () => {},
): Promise<PgliteThread> {
  const worker = new Worker(BOOT, { eval: true, workerData: options });
  let pending: { expect: StoreThreadReply['type']; resolve: () => void; reject: (e: Error) => void } | null = null;
  let exited = false;

  const request = (req: StoreThreadRequest, expect: StoreThreadReply['type']): Promise<void> => {
    if (exited) return Promise.reject(new StoreError('the store thread has exited'));
    if (pending) return Promise.reject(new StoreError('the store thread is busy'));
    return new Promise((resolve, reject) => {
      pending = { expect, resolve, reject };
      worker.postMessage(req);
    });
  };

  return new Promise((resolve, reject) => {
    let started = false;
    worker.on('message', (msg: StoreThreadReply) => {
      if (!started) {
        started = true;
        if (msg.type === 'listening') {
          resolve({
            port: msg.port,
            dump: (path) => request({ type: 'dump', path }, 'dumped'),
            close: () => request({ type: 'close' }, 'closed'),
          });
        } else {
          reject(new StoreError(msg.type === 'failed' ? msg.message : `unexpected ${msg.type} from the store thread`));
        }
        return;
      }
      const p = pending;
      pending = null;
      if (!p) return;
      if (msg.type === p.expect) p.resolve();
      else
        p.reject(new StoreError(msg.type === 'failed' ? msg.message : `unexpected ${msg.type} from the store thread`));
    });
    worker.on('error', (err) => {
      const e = new StoreError(`store thread failed: ${err.message}`, { cause: err });
      if (!started) {
        started = true;
        reject(e);
      } else if (pending) {
        pending.reject(e);
        pending = null;
      }
    });
    worker.on('exit', (code) => {
      exited = true;
      const p = pending;
      pending = null;
      if (!started) {
        started = true;
        reject(new StoreError(`store thread exited with code ${code} before listening`));
      } else if (p?.expect === 'closed') {
        p.resolve();
      } else {
        const lost = new StoreError(`store thread exited with code ${code}`);
        p?.reject(lost);
        onLost(lost);
      }
    });
  });
}
