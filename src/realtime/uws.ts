// The one door to uWebSockets.js (DESIGN.md, "Chosen dependencies": a third-party republish of the upstream
// binaries, kept behind one small module so it can be swapped). Everything realtime imports uWS through here.
import uWS from 'uWebSockets.js';

export type { HttpRequest, HttpResponse, TemplatedApp, us_listen_socket, us_socket_context_t, WebSocket } from 'uWebSockets.js';

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
