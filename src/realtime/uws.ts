// The one door to uWebSockets.js (installed as a third-party republish of the upstream binaries, so kept behind
// one small module that can be swapped). Everything realtime imports uWS through here.
import uWS from 'uWebSockets.js';

import type { HttpResponse, RecognizedString, us_socket_context_t } from 'uWebSockets.js';

export type {
  HttpRequest,
  HttpResponse,
  TemplatedApp,
  us_listen_socket,
  us_socket_context_t,
  WebSocket,
} from 'uWebSockets.js';

export const App = uWS.App;
export const DISABLED = uWS.DISABLED;
export const closeListenSocket = uWS.us_listen_socket_close;
export const listenSocketPort = uWS.us_socket_local_port;

/** WebSocket.send results (uWS index.d.ts): sent, queued behind backpressure, or dropped at maxBackpressure. */
export const SEND_OK = 1;
export const SEND_BACKPRESSURE = 0;
export const SEND_DROPPED = 2;

/** Text of one of uWS's ArrayBuffer addresses or header values. */
export function text(buf: ArrayBuffer): string {
  return Buffer.from(buf).toString('utf8');
}

/** What an upgrade needs from its request, copied out before the request died (uWS frees it after the callback). */
export interface UpgradeHandshake {
  key: RecognizedString;
  protocol: RecognizedString;
  extensions: RecognizedString;
  context: us_socket_context_t;
}

/**
 * Completes a WebSocket upgrade after an await (authentication answered after the upgrade callback returned).
 *
 * Deliberately NOT inside `res.cork()`. uWS's HttpResponse::cork(), once its callback returns, runs the HTTP
 * response's "Connection: close" bookkeeping on the socket; the upgrade inside the callback has just adopted that
 * socket as a WebSocket, and when glibc shrinks the block in place (the usual case) cork() does not notice,
 * reads the response state out of what is now WebSocket memory and, for some byte patterns, shuts the fresh
 * socket down: the client gets its 101 and then a close 1006 with nothing sent (uNetworking/uWebSockets issue
 * 1928, fixed upstream by pull request 1929; the uWS.js binaries pinned in package.json predate it, and 3.0.6 is
 * the latest of the package). Uncorked, uWS writes the 101 itself; uWS.js prints its "writes must be made from within
 * a corked callback" warning on stderr for it, the price of sockets that stay open until a fixed binary can be
 * pinned. No other corked place exists for it: uWS.js counts a write as corked only inside one of its own callbacks
 * or inside res.cork() / ws.cork() (src/Utilities.h CallJS, HttpResponseWrapper.h res_cork); the answer of an
 * authentication arrives in neither, res.cork() of this response is the call with the bug, and ws.cork() needs
 * another open socket to lend its cork, which a worker may not have.
 */
export function upgradeAfterAwait<T>(res: HttpResponse, userData: T, h: UpgradeHandshake): void {
  res.upgrade(userData, h.key, h.protocol, h.extensions, h.context);
}
