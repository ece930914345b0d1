// SDP session description model (RFC 4566 section 5). Only what a G.711 voice gateway needs is
// typed; every other line is kept verbatim so a parsed description serializes back unchanged.

export type AddrType = 'IP4' | 'IP6';

/** RFC 4566 5.7 "c=<nettype> <addrtype> <connection-address>". */
export interface Connection {
  netType: string;
  addrType: AddrType;
  address: string;
}

/** RFC 4566 5.2 "o=<username> <sess-id> <sess-version> <nettype> <addrtype> <unicast-address>". */
export interface Origin {
  username: string;
  sessionId: string;
  sessionVersion: string;
  netType: string;
  addrType: AddrType;
  address: string;
}

/** RFC 4566 5.13 "a=<attribute>" or "a=<attribute>:<value>". */
export interface Attribute {
  name: string;
  value: string | null;
}

/** RFC 4566 5.14 "m=<media> <port>[/<number of ports>] <proto> <fmt> ...", with its own lines. */
export interface MediaDescription {
  media: string;
  port: number;
  portCount: number | null;
  proto: string;
  formats: string[];
  connection: Connection | null;
  /** b=, i=, k= lines kept verbatim ("b=AS:64"). */
  otherLines: string[];
  attributes: Attribute[];
}

export interface SessionDescription {
  version: number;
  origin: Origin;
  sessionName: string;
  connection: Connection | null;
  /** t= lines ("0 0"). */
  timing: string[];
  /** i=, u=, e=, p=, b=, z=, k=, r= lines kept verbatim in order. */
  otherLines: string[];
  attributes: Attribute[];
  media: MediaDescription[];
}

/** RFC 3264 5.1 / RFC 4566 6: the media direction attributes. */
export type Direction = 'sendrecv' | 'sendonly' | 'recvonly' | 'inactive';
export const DIRECTIONS: readonly Direction[] = ['sendrecv', 'sendonly', 'recvonly', 'inactive'];

/** One audio codec as offered or answered. */
export interface Codec {
  payloadType: number;
  name: string;
  clockRate: number;
  channels: number;
  fmtp: string | null;
}
