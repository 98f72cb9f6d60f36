/**
 * The lab's payload in its registry, as a platform team ships one: `winfleet payload push` (the
 * CLI, as docs/cli.md shows it) stores the payload directory in the lab registry as winfleet's
 * OCI artifact, and the operator runs with the printed reference (--payload-image), so hosts
 * that reach the registry pull their files themselves. A new payload written into the
 * directory (sim/lab/next-payload.ts) is pushed the same way and the operator restarted with
 * the new reference, as `helm upgrade --set payload.registry.reference=…` rolls the
 * Deployment; the pool then rolls it out to the hosts.
 */
import { execFile } from 'node:child_process';
import { stat } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const cliMain = fileURLToPath(new URL('../../src/cli/main.ts', import.meta.url));

/** The repository the lab keeps its payload in, on the lab registry. */
export const labPayloadRepository = 'winfleet/payload';

/** What a push did: the reference pinned by digest, and the command that made it. */
export interface PushedLabPayload {
  reference: string;
  /** The command line as a person would type it (`winfleet payload push …`). */
  command: string;
}

/**
 * Runs `winfleet payload push <dir> <registry>/winfleet/payload:<version> --plain-http` and
 * returns the reference it prints last.
 */
export async function pushLabPayload(
  dir: string,
  registryHost: string,
  version: string,
): Promise<PushedLabPayload> {
  const target = `${registryHost}/${labPayloadRepository}:${version}`;
  const args = ['payload', 'push', dir, target, '--plain-http'];
  const { stdout } = await promisify(execFile)(process.execPath, [cliMain, ...args], {
    timeout: 10 * 60_000,
    maxBuffer: 16 * 1024 * 1024,
  }).catch((error: { stderr?: string; message: string }) => {
    throw new Error(`winfleet ${args.join(' ')} failed: ${error.stderr?.trim() || error.message}`);
  });
  const reference = stdout.trim().split('\n').at(-1) ?? '';
  if (!/@sha256:[0-9a-f]{64}$/.test(reference))
    throw new Error(
      `winfleet ${args.join(' ')} printed no pinned reference: ${stdout.slice(-500)}`,
    );
  return { reference, command: `winfleet ${args.join(' ')}` };
}

/**
 * Calls `onChange` whenever payload.json in `dir` changes (its mtime and size, looked at every
 * 2 s), one call at a time; returns the function that stops looking.
 */
export function watchLabPayload(dir: string, onChange: () => Promise<void>): () => void {
  const file = join(dir, 'payload.json');
  const fingerprint = () =>
    stat(file).then(
      (s) => `${s.mtimeMs}:${s.size}`,
      () => undefined,
    );
  let seen: string | undefined;
  let busy = false;
  void fingerprint().then((first) => {
    seen ??= first;
  });
  const poll = setInterval(() => {
    if (busy) return;
    busy = true;
    void fingerprint()
      .then(async (now) => {
        if (now === undefined || now === seen) return;
        seen = now;
        await onChange();
      })
      .catch(() => {})
      .finally(() => {
        busy = false;
      });
  }, 2000);
  poll.unref();
  return () => clearInterval(poll);
}
