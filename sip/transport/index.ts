// sip/transport: UDP and TCP on one port (RFC 3261 18), handing parsed messages up through callbacks.
//
//   const t = await SipTransport.listen({ message(msg, source), invalid?(err, source), connectionClosed? },
//                                       { host, port, advertisedHost, udpSizeLimit, keepAliveIntervalMs })
//   t.sentBy                                   'host:port' for Via sent-by
//   t.prepareRequest(req, target)              -> { bytes, target, reliable }: the 18.1.1 size rule (> 1300
//                                              bytes over UDP -> TCP, top Via rewritten); keep bytes to resend
//   t.sendBytes(bytes, target) / t.sendRequest(req, target)
//   t.sendResponse(res, source?)               18.2.2: same TCP connection if open, else Via received/rport
//   t.ping(address, port)                      RFC 5626 3.5.1 CRLFCRLF ping, resolves on the CRLF pong
//   t.holdConnection(source | target) -> release   keep that TCP connection open (a transaction, a dialog)
// Requests arrive with received/rport stamped on their top Via (18.2.1, RFC 3581). TCP connections are
// keyed by remote address:port, and also by the address:port their requests' Via names, and reused both
// ways (a response without its Source still goes back on the open connection); one unheld and silent for
// idleTimeoutMs (default TCP_IDLE_TIMEOUT_MS, 64*T1) is closed; one remote address may hold
// maxConnectionsPerAddress accepted connections (default MAX_TCP_CONNECTIONS_PER_ADDRESS). Failures: TransportError.
export { SipTransport, resolveHost, type PreparedRequest } from './transport.js';
export { stampReceived, responseDestination, bareAddress, type ResponseDestination } from './via.js';
export { connectionKey } from './tcp.js';
export * from './types.js';
