// Splits a stream transport's bytes into SIP messages by Content-Length (RFC 3261 18.3), tolerating and
// reporting CRLF keep-alives between messages (RFC 5626 3.5.1: a double CRLF is a ping, a single CRLF
// the pong). A framing error (no Content-Length, headers too long) is fatal: the connection must close.
import { SipParseError } from '../errors.js';
import { findHeaderEnd, MAX_CONTENT_LENGTH, parseMessage } from './parser.js';
import type { SipMessage } from './types.js';

/** Longest start line + headers accepted before the blank line (bounds memory held per connection). */
export const MAX_HEAD_BYTES = 65536;
const CR = 0x0d;
const LF = 0x0a;
// RFC 3261 7.3.3: Content-Length or its compact form l.
const CONTENT_LENGTH = /^(?:content-length|l)[ \t]*:[ \t]*(?<value>[^\r\n]*)/im;

export interface FramerHandlers {
  message(msg: SipMessage): void;
  /** A message whose framing was fine but whose content is not: the stream goes on. */
  invalid(err: SipParseError): void;
  /** The stream cannot be framed any more; later input is ignored. */
  fatal(err: SipParseError): void;
  /** RFC 5626 3.5.1: CRLFCRLF ping received (answer with a single CRLF). */
  ping(): void;
  /** RFC 5626 3.5.1: single CRLF pong received. */
  pong(): void;
}

export class StreamFramer {
  private pending: Buffer = Buffer.alloc(0);
  private failed = false;

  constructor(private readonly handlers: FramerHandlers) {}

  push(chunk: Buffer): void {
    if (this.failed) return;
    this.pending = this.pending.length === 0 ? chunk : Buffer.concat([this.pending, chunk]);
    const buf = this.pending;
    let at = 0;
    for (;;) {
      // keep-alives between messages
      while (at < buf.length && (buf[at] === CR || buf[at] === LF)) {
        if (buf[at] === CR && buf[at + 1] === LF && buf[at + 2] === CR && buf[at + 3] === LF) {
          at += 4;
          this.handlers.ping();
        } else if (buf[at] === CR && buf[at + 1] === LF) {
          at += 2;
          this.handlers.pong();
        } else at++; // a bare CR or LF: tolerated (RFC 3261 7.5)
      }
      if (at >= buf.length) break;
      const end = findHeaderEnd(buf, at);
      if (end.at < 0) {
        if (buf.length - at > MAX_HEAD_BYTES) return this.fail(new SipParseError('headers too long'));
        break;
      }
      const head = buf.toString('latin1', at, end.at);
      const value = CONTENT_LENGTH.exec(head)?.groups?.value;
      if (value === undefined) return this.fail(new SipParseError('Content-Length is mandatory on stream transports'));
      const text = value.trim();
      if (!/^[0-9]{1,9}$/.test(text) || Number(text) > MAX_CONTENT_LENGTH)
        return this.fail(new SipParseError(`bad Content-Length "${text}"`));
      const total = end.at + end.len + Number(text);
      if (total > buf.length) break;
      const one = buf.subarray(at, total);
      at = total;
      let msg: SipMessage;
      try {
        msg = parseMessage(one, { stream: true });
      } catch (err) {
        if (!(err instanceof SipParseError)) throw err;
        this.handlers.invalid(err);
        continue;
      }
      this.handlers.message(msg);
      if (this.failed) return;
    }
    // keep only the unconsumed tail (copied, so one big chunk is not pinned by a small remainder)
    this.pending = at >= buf.length ? Buffer.alloc(0) : Buffer.from(buf.subarray(at));
  }

  private fail(err: SipParseError): void {
    this.failed = true;
    this.pending = Buffer.alloc(0);
    this.handlers.fatal(err);
  }
}
