// SIP message serializer: start line, headers in order, Content-Length always equal to the body's length
// (RFC 3261 18.3, 20.14), blank line, body.
import type { SipMessage } from './types.js';
import { serializeUri } from './uri.js';

/** The start line and headers, ending with the blank line, with Content-Length set from the body. */
export function serializeHead(msg: SipMessage): string {
  let out =
    msg.kind === 'request'
      ? `${msg.method} ${serializeUri(msg.uri)} ${msg.version}\r\n`
      : `${msg.version} ${msg.status} ${msg.reason}\r\n`;
  let lengthWritten = false;
  for (const [name, value] of msg.headers.entries()) {
    if (name === 'Content-Length') {
      if (!lengthWritten) out += `Content-Length: ${msg.body.length}\r\n`;
      lengthWritten = true;
      continue;
    }
    out += `${name}: ${value}\r\n`;
  }
  if (!lengthWritten) out += `Content-Length: ${msg.body.length}\r\n`;
  return out + '\r\n';
}

/** The whole message as bytes. */
export function serializeMessage(msg: SipMessage): Buffer {
  const head = serializeHead(msg);
  const headLength = Buffer.byteLength(head, 'utf8');
  const out = Buffer.allocUnsafe(headLength + msg.body.length);
  out.write(head, 0, 'utf8');
  msg.body.copy(out, headLength);
  return out;
}
