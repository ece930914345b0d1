// The domain's one error type. Each adapter maps it once: src/api/errors.ts to an HTTP status and body,
// src/workers/main-handlers.ts to a worker-protocol reply, telephony to a SIP response. The domain knows no
// status codes: a kind says what went wrong, a stable code says which rule, paramErrors which parameters.

/** What went wrong, as far as every adapter needs to know. */
export type DomainErrorKind =
  /** The request breaks a rule of the resource (bad reference, bad combination). */
  | 'invalid'
  /** Nothing of that name or id in the caller's workspace. */
  | 'not_found'
  /** It exists but belongs to another workspace, or the caller may not do this. */
  | 'forbidden'
  /** The resource's state refuses the change (a name taken, a disabled agent, a write in flight). */
  | 'conflict'
  /** A quota is used up (concurrent conversations). */
  | 'limit_reached'
  /** This node cannot do it now (a service it needs is missing or down). */
  | 'unavailable';

/** The code of an error given none, by kind. */
const DEFAULT_CODE: Record<DomainErrorKind, string> = {
  invalid: 'bad_request',
  not_found: 'not_found',
  forbidden: 'forbidden',
  conflict: 'conflict',
  limit_reached: 'limit_reached',
  unavailable: 'unavailable',
};

export class DomainError extends Error {
  readonly code: string;
  /** Present: the error is about these parameters (path `a.b.0` -> message), shown in the validation shape. */
  readonly paramErrors?: Record<string, string>;

  constructor(
    readonly kind: DomainErrorKind,
    message: string,
    opts: { code?: string; paramErrors?: Record<string, string> } = {},
  ) {
    super(message);
    this.name = 'DomainError';
    this.code = opts.code ?? DEFAULT_CODE[kind];
    if (opts.paramErrors) this.paramErrors = opts.paramErrors;
  }
}

/** `agent 'sales' not found` (or `workspace not found` with no name). */
export const notFound = (what: string, nameOrId?: string) =>
  new DomainError('not_found', nameOrId === undefined ? `${what} not found` : `${what} '${nameOrId}' not found`);

export const forbidden = (message: string, code?: string) => new DomainError('forbidden', message, { code });

export const conflict = (message: string, code?: string) => new DomainError('conflict', message, { code });

/** Rule breaches of named parameters; the message names the first. `kind` conflict: a name already taken. */
export function invalidParams(issues: Record<string, string>, kind: 'invalid' | 'conflict' = 'invalid'): DomainError {
  const first = Object.keys(issues)[0] ?? 'body';
  return new DomainError(kind, `invalid parameter ${first}: ${issues[first] ?? 'invalid'}`, { paramErrors: issues });
}

/** One parameter's breach: `invalidParam('name', 'already exists', 'conflict')`. */
export const invalidParam = (param: string, message: string, kind: 'invalid' | 'conflict' = 'invalid') =>
  invalidParams({ [param]: message }, kind);
