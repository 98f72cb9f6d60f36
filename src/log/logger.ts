/**
 * Structured logs: one JSON object per line on stderr. Fields whose names say they hold a
 * secret are replaced by "[redacted]" at any depth, so a key or token passed along by mistake
 * never reaches a log.
 */

export type LogLevel = 'debug' | 'info' | 'warn' | 'error';
export type LogFields = Record<string, unknown>;

const levels: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40 };
// Names of fields that hold secrets. A bare "key" is not one: work queues log object keys.
const secretName =
  /(pass(word)?|secret|token|private.?key|key.?pem|keydata|key-data|tls\.key|ca\.key|credential|authorization|ssh.?key)/i;

/** Copies `value` with secret-named fields replaced; errors become {name, message}. */
export function redact(value: unknown, depth = 0): unknown {
  if (depth > 8) return '[deep]';
  if (value instanceof Error) return { name: value.name, message: value.message };
  if (Array.isArray(value)) return value.map((v) => redact(v, depth + 1));
  if (value && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) {
      out[k] =
        secretName.test(k) && v !== undefined && v !== null && v !== ''
          ? '[redacted]'
          : redact(v, depth + 1);
    }
    return out;
  }
  return value;
}

export interface Logger {
  debug(message: string, fields?: LogFields): void;
  info(message: string, fields?: LogFields): void;
  warn(message: string, fields?: LogFields): void;
  error(message: string, fields?: LogFields): void;
  /** A logger that adds `fields` to every line. */
  child(fields: LogFields): Logger;
}

export interface LoggerOptions {
  level?: LogLevel;
  /** Where lines go (default: stderr). */
  write?: (line: string) => void;
}

/** Creates a JSON-lines logger. The level defaults to WINFLEET_LOG_LEVEL or "info". */
export function createLogger(options: LoggerOptions = {}, base: LogFields = {}): Logger {
  const envLevel = process.env.WINFLEET_LOG_LEVEL as LogLevel | undefined;
  const min = levels[options.level ?? (envLevel && envLevel in levels ? envLevel : 'info')];
  const write = options.write ?? ((line: string) => process.stderr.write(line));
  const emit = (level: LogLevel, message: string, fields?: LogFields) => {
    if (levels[level] < min) return;
    const record = { time: new Date().toISOString(), level, msg: message, ...base, ...fields };
    write(`${JSON.stringify(redact(record))}\n`);
  };
  return {
    debug: (m, f) => emit('debug', m, f),
    info: (m, f) => emit('info', m, f),
    warn: (m, f) => emit('warn', m, f),
    error: (m, f) => emit('error', m, f),
    child: (fields) => createLogger(options, { ...base, ...fields }),
  };
}

const nothing = () => {};

/** A logger that drops everything without formatting it (tests, benchmarks). */
export const silentLogger: Logger = {
  debug: nothing,
  info: nothing,
  warn: nothing,
  error: nothing,
  child: () => silentLogger,
};
