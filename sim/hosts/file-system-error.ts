/**
 * The errors a simulated host's file system raises. They carry the same `code` Node's fs
 * module gives on Windows (ENOENT, EEXIST, ENOSPC, EBUSY, EPERM, ...), so agent code that
 * checks `err.code` behaves as on a real host, and the Windows system message in the text.
 */

/** Node error codes the simulated file system uses, with the Windows text for each. */
export const windowsErrorText = {
  ENOENT: 'The system cannot find the file specified.',
  EEXIST: 'Cannot create a file when that file already exists.',
  ENOSPC: 'There is not enough space on the disk.',
  EBUSY: 'The process cannot access the file because it is being used by another process.',
  EPERM: 'Access is denied.',
  ENOTDIR: 'The directory name is invalid.',
  EISDIR: 'Access is denied.',
  ENOTEMPTY: 'The directory is not empty.',
  EINVAL: 'The filename, directory name, or volume label syntax is incorrect.',
} as const;

export type SimFsErrorCode = keyof typeof windowsErrorText;

/** A failed file operation on a simulated host. */
export class SimFsError extends Error {
  readonly code: SimFsErrorCode;
  readonly path: string;

  constructor(code: SimFsErrorCode, message: string, path: string) {
    super(message);
    this.name = 'SimFsError';
    this.code = code;
    this.path = path;
  }
}

/** A SimFsError with Windows' own text for `code`, naming what was attempted on `path`. */
export function fsError(code: SimFsErrorCode, action: string, path: string): SimFsError {
  return new SimFsError(code, `${code}: ${windowsErrorText[code]} (${action} "${path}")`, path);
}

/** The `code` of an error from node:fs or the simulated file system. */
export function errorCode(error: unknown): string | undefined {
  return (error as NodeJS.ErrnoException | undefined)?.code;
}
