// The one structured logger (pino). Modules take a child logger with their own bindings.
import { pino, type Logger } from 'pino';

export type { Logger };

export function createLogger(level: string = process.env.PARLEY_LOG_LEVEL ?? 'info'): Logger {
  return pino({ level, base: { pid: process.pid } });
}
