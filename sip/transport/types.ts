// Shared types of the transport layer (RFC 3261 18).
import type { SipParseError } from '../errors.js';
import type { SipMessage } from '../message/types.js';

export type TransportName = 'UDP' | 'TCP';

/** Where a message came from. `connection` identifies the TCP connection it arrived on. */
export interface Source {
  transport: TransportName;
  address: string;
  port: number;
  connection?: number;
}

/** Where to send: an IP address (no brackets), a port, a transport. */
export interface Target {
  transport: TransportName;
  address: string;
  port: number;
}

export interface TransportHandlers {
  /** A parsed message; requests already carry received/rport on their top Via (RFC 3261 18.2.1, RFC 3581 4). */
  message(msg: SipMessage, source: Source): void;
  /** A message that could not be parsed; `err.partial` (if any) is enough to answer with `err.status`. */
  invalid?(err: SipParseError, source: Source): void;
  /** A TCP connection closed or failed its keep-alive (RFC 5626 4.4.1). */
  connectionClosed?(key: string, err?: Error): void;
}

export interface TransportOptions {
  /** Address to bind, default 127.0.0.1 (an IPv6 literal binds IPv6). */
  host?: string;
  /** Port for both UDP and TCP (RFC 3261 18: one port, both transports); 0 picks a free one. */
  port?: number;
  /** Host advertised in Via sent-by, default the bound host. */
  advertisedHost?: string;
  /** Requests over UDP longer than this switch to TCP (RFC 3261 18.1.1: 1300 when the MTU is unknown). */
  udpSizeLimit?: number;
  /** Send a CRLFCRLF ping on connections we opened at this interval (RFC 5626 3.5.1); 0 = off. */
  keepAliveIntervalMs?: number;
  /** How long to wait for the pong before the flow is considered failed (RFC 5626 4.4.1: 10 s). */
  keepAliveTimeoutMs?: number;
  /**
   * Close a TCP connection that carried no whole message for this long and that no transaction or dialog holds
   * (SipTransport.holdConnection); default TCP_IDLE_TIMEOUT_MS, 0 = never.
   */
  idleTimeoutMs?: number;
  /** TCP connections accepted from one remote address at a time; default MAX_TCP_CONNECTIONS_PER_ADDRESS. */
  maxConnectionsPerAddress?: number;
}

/** Default port when a URI or Via names none (RFC 3261 19.1.2). */
export const DEFAULT_SIP_PORT = 5060;
/** RFC 3261 18.1.1: larger than 1300 bytes with an unknown path MTU goes over a congestion-controlled transport. */
export const UDP_SIZE_LIMIT = 1300;
/** RFC 5626 4.4.1: a pong not received within 10 seconds means the flow failed. */
export const KEEPALIVE_PONG_TIMEOUT_MS = 10_000;
/**
 * RFC 3261 18.1.1: keep a connection open at least as long as a transaction on it may take to terminate, which
 * is 64*T1 (Timers B, F, H, L, M with T1 = 500 ms). Counted from the last message or the last hold released, so
 * a connection outlives its last transaction by that much before it is closed.
 */
export const TCP_IDLE_TIMEOUT_MS = 64 * 500;
/**
 * A SIP peer reuses one connection or a few (RFC 5923); a proxy in front of many callers (Kamailio) still does.
 * Far more from one address is someone taking the process's sockets.
 */
export const MAX_TCP_CONNECTIONS_PER_ADDRESS = 64;
/** Largest UDP datagram (RFC 768 length field). */
export const MAX_DATAGRAM = 65535;

export type { SipMessage };
