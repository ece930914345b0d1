// The control plane's errors and their two bodies: `{error: {message, code}}`, and for invalid parameters
// `{error: {message}, param_errors: {"a.b.0": message}}`. Domain errors are mapped here, once: a status per kind.
// ApiError is this adapter's own (authentication, signed links, upstream failures of POST /v1/responses).
import { STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { hasZodFastifySchemaValidationErrors, isResponseSerializationError } from 'fastify-type-provider-zod';
import { DomainError, type DomainErrorKind } from '../domain/errors.js';
import { isDatabaseUnavailable } from '../store/db.js';

export interface ApiErrorOptions {
  code?: string;
  /** Present: the body takes the validation shape `{error: {message}, param_errors}`. */
  paramErrors?: Record<string, string>;
}

export class ApiError extends Error {
  readonly code?: string;
  readonly paramErrors?: Record<string, string>;
  constructor(
    readonly status: number,
    message: string,
    opts: ApiErrorOptions = {},
  ) {
    super(message);
    this.name = 'ApiError';
    this.code = opts.code;
    this.paramErrors = opts.paramErrors;
  }
}

/** The HTTP status of each kind of domain error. */
const STATUS_OF_KIND: Record<DomainErrorKind, number> = {
  invalid: 400,
  forbidden: 403,
  not_found: 404,
  conflict: 409,
  limit_reached: 429,
  unavailable: 503,
};

/** Seconds a client is asked to wait (Retry-After, RFC 9110 10.2.3) before repeating a request answered 503. */
export const RETRY_AFTER_SEC = 2;

/** The database could not be reached: the same request may succeed shortly. */
const DATABASE_UNAVAILABLE = new DomainError('unavailable', 'the database is unavailable: try again shortly', {
  code: 'database_unavailable',
});

/** A domain error as this adapter answers it. */
export function fromDomain(err: DomainError): ApiError {
  return new ApiError(
    STATUS_OF_KIND[err.kind],
    err.message,
    err.paramErrors ? { paramErrors: err.paramErrors } : { code: err.code },
  );
}

export const forbidden = (message: string, code = 'forbidden') => new ApiError(403, message, { code });
export const unauthorized = (message: string) => new ApiError(401, message, { code: 'unauthorized' });
export const notFound = (what: string, nameOrId: string) =>
  new ApiError(404, `${what} '${nameOrId}' not found`, { code: 'not_found' });

export type ErrorBody =
  { error: { message: string; code?: string } } | { error: { message: string }; param_errors: Record<string, string> };

export function errorBody(err: ApiError): ErrorBody {
  if (err.paramErrors) return { error: { message: err.message }, param_errors: err.paramErrors };
  return { error: err.code ? { message: err.message, code: err.code } : { message: err.message } };
}

/** `/a/b/0` (a zod issue path as the type provider reports it) -> `a.b.0`; the root -> the part's name. */
function paramPath(instancePath: string, context: string | undefined): string {
  const path = instancePath.replace(/^\//, '').split('/').filter(Boolean).join('.');
  return path || context || 'body';
}

/**
 * Maps a domain error, an ApiError, a validation failure or any other error to the two bodies; 500s are logged. An
 * unreachable database (src/store/db.ts isDatabaseUnavailable) is 503 `database_unavailable`; every 503 carries
 * Retry-After.
 */
export function installErrorHandler(app: FastifyInstance): void {
  app.setErrorHandler((err: FastifyError | ApiError | DomainError | Error, request, reply) => {
    if (!(err instanceof ApiError) && !(err instanceof DomainError) && isDatabaseUnavailable(err)) {
      request.log.warn({ err }, 'database unavailable');
      err = DATABASE_UNAVAILABLE;
    }
    if (err instanceof DomainError) err = fromDomain(err);
    if (err instanceof ApiError) {
      if (err.status === 503) reply.header('retry-after', String(RETRY_AFTER_SEC));
      return reply.status(err.status).send(errorBody(err));
    }
    if (hasZodFastifySchemaValidationErrors(err)) {
      const paramErrors: Record<string, string> = {};
      const context = (err as FastifyError).validationContext;
      for (const issue of err.validation) {
        const root = context === 'body' ? undefined : context;
        const unknownKeys =
          issue.keyword === 'unrecognized_keys' ? (issue.params as { keys?: string[] }).keys : undefined;
        if (unknownKeys?.length) {
          // Each unknown parameter is named by its own path (`a.b.extra`), not by its parent object.
          for (const k of unknownKeys)
            paramErrors[paramPath(`${issue.instancePath}/${k}`, root)] ??= 'unknown parameter';
          continue;
        }
        paramErrors[paramPath(issue.instancePath, root)] ??= issue.message ?? 'invalid';
      }
      const first = Object.keys(paramErrors)[0] ?? 'body';
      return reply
        .status(400)
        .send(errorBody(new ApiError(400, `invalid parameter ${first}: ${paramErrors[first]}`, { paramErrors })));
    }
    const fe = err as FastifyError;
    if (
      !isResponseSerializationError(err) &&
      typeof fe.statusCode === 'number' &&
      fe.statusCode >= 400 &&
      fe.statusCode < 500
    ) {
      // Fastify's own client errors (malformed JSON, unsupported media type, body too large).
      if (
        fe.code === 'FST_ERR_CTP_INVALID_JSON_BODY' ||
        fe.code === 'FST_ERR_CTP_EMPTY_JSON_BODY' ||
        fe.statusCode === 400
      ) {
        return reply.status(400).send(errorBody(new ApiError(400, fe.message, { paramErrors: { body: fe.message } })));
      }
      return reply
        .status(fe.statusCode)
        .send(errorBody(new ApiError(fe.statusCode, fe.message, { code: fe.code?.toLowerCase() })));
    }
    request.log.error({ err }, 'internal error');
    return reply.status(500).send(errorBody(new ApiError(500, 'internal error', { code: 'internal_error' })));
  });
}

/** The answer to an unknown path: 404 naming the method and path. */
export function routeNotFound(request: FastifyRequest, reply: FastifyReply): void {
  reply
    .status(404)
    .send(
      errorBody(new ApiError(404, `no route ${request.method} ${request.url.split('?')[0]}`, { code: 'not_found' })),
    );
}

/**
 * Node's HTTP parser refused a request before Fastify saw it (the server's `clientError`): headers larger than
 * the limit (431), a request that took too long (408), malformed HTTP (400). Answered with the API's body on the
 * raw socket, which is then closed (the parser cannot go on after an error).
 */
export function answerClientError(err: NodeJS.ErrnoException, socket: Duplex): void {
  if (err.code === 'ECONNRESET' || socket.destroyed) return;
  const [status, message, code]: [number, string, string] =
    err.code === 'HPE_HEADER_OVERFLOW'
      ? [431, 'request header fields too large', 'request_header_fields_too_large']
      : err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
        ? [408, 'the request was not received in time', 'request_timeout']
        : [400, 'malformed HTTP request', 'bad_request'];
  if (!socket.writable) return void socket.destroy();
  const body = JSON.stringify(errorBody(new ApiError(status, message, { code })));
  const head = `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\ncontent-type: application/json; charset=utf-8\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n`;
  socket.end(head + body, () => socket.destroy());
}

/** Errors Fastify's router meets before a route runs (a malformed URL escape, too long a path parameter). */
export function answerFrameworkError(err: FastifyError, _request: FastifyRequest, reply: FastifyReply): void {
  const status = err.statusCode ?? 400;
  reply.status(status).send(errorBody(new ApiError(status, err.message, { code: err.code?.toLowerCase() })));
}
