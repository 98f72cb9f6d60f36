/**
 * Where a payload artifact is read from: the mirrors of its registry host, in order, then the
 * registry itself (always: every byte is checked against a digest, so any copy is as good as
 * another, and the registry is the one place known to hold it), each with the credentials a
 * Docker config gives for it. `firstThatWorks` tries them in that order and, when none works,
 * says why for each in one error: WF_PAYLOAD_DOWNLOAD (retryable) when one was down,
 * unreachable or refused, WF_PAYLOAD_INVALID (not retried) when all that answered served
 * other content than the digest pins.
 */

import { errorCode, WinfleetError } from '../../errors/catalog.ts';
import { type DockerConfigSource, findRegistryCredentials } from '../../images/docker-config.ts';
import { registryApiHost } from '../../images/image-reference.ts';
import type { CredentialWording } from '../../images/registry-auth.ts';
import { isRegistryLookupError } from '../../images/registry-lookup-error.ts';
import {
  compileRegistryRouting,
  lookupTargets,
  type RegistryMirror,
} from '../../images/registry-mirrors.ts';
import type { PayloadTarget } from './payload-registry.ts';
import { targetName } from './payload-registry.ts';

/** A payload artifact's repository: registry host[:port] and path. */
export interface PayloadRepository {
  registry: string;
  repository: string;
}

/** How to reach a payload's registry. */
export interface PayloadRouting {
  /** Mirrors of the registry host, tried first, in order (winfleet-config images.mirrors). */
  mirrors?: readonly RegistryMirror[];
  /** Reach the registry itself over plain HTTP (loopback registries). */
  plainHttp?: boolean;
  /** PEM CA certificates trusted for the registry itself, besides the system roots. */
  caBundle?: string;
  /** Docker config documents to find credentials in (a pull secret, ~/.docker/config.json). */
  credentials?: readonly DockerConfigSource[];
  /** How messages speak of credentials. */
  wording?: CredentialWording;
}

/** The targets of `repo` in the order they are tried. Throws WF_PAYLOAD_INVALID for bad mirrors. */
export function payloadTargets(
  repo: PayloadRepository,
  routing: PayloadRouting = {},
): PayloadTarget[] {
  const custom = routing.plainHttp || routing.caBundle;
  let compiled: ReturnType<typeof compileRegistryRouting>;
  try {
    compiled = compileRegistryRouting({
      ...(routing.mirrors && routing.mirrors.length > 0
        ? { mirrors: { [repo.registry]: routing.mirrors } }
        : {}),
      ...(custom
        ? {
            registries: {
              [repo.registry]: {
                endpoint: `${routing.plainHttp ? 'http' : 'https'}://${registryApiHost(repo.registry)}`,
                ...(routing.plainHttp ? { insecure: true } : {}),
                ...(routing.caBundle ? { caBundle: routing.caBundle } : {}),
              },
            },
          }
        : {}),
      fallbackToUpstream: true,
    });
  } catch (error) {
    throw new WinfleetError(
      'WF_PAYLOAD_INVALID',
      `Cannot use the payload registry's mirrors: ${(error as Error).message}`,
    );
  }
  const problems: string[] = [];
  return lookupTargets(repo, compiled).map((t) => {
    const match = findRegistryCredentials(
      t.credentialHost,
      t.repository,
      routing.credentials ?? [],
      problems,
    );
    return {
      endpoint: t.endpoint,
      repository: t.repository,
      mirror: t.mirror,
      ...(match ? { credentials: match.credentials } : {}),
      ...(routing.wording ? { wording: routing.wording } : {}),
    };
  });
}

/** Why one target failed. */
interface Failure {
  target: PayloadTarget;
  error: unknown;
}

/** Whether the target caused `error`: it could not be read, or served wrong content. */
function isSourceError(error: unknown): boolean {
  return errorCode(error) === 'WF_PAYLOAD_INVALID' || isRegistryLookupError(error);
}

/** Whether waiting may help: the target was down, slow, overloaded or refused us. */
function isTransient(error: unknown): boolean {
  if (errorCode(error) === 'WF_PAYLOAD_INVALID') return false;
  if (isRegistryLookupError(error)) return error.details.reason !== 'invalid-manifest';
  return true;
}

/** What a registry says is wrong, and what to do about it. */
function fixFor(failures: readonly Failure[]): string {
  const reasons = new Set(
    failures.map((f) => (isRegistryLookupError(f.error) ? f.error.details.reason : 'other')),
  );
  if (failures.every((f) => !isTransient(f.error)))
    return 'the registry serves other content than the digest pins: push the payload again (winfleet payload push) and check the mirrors';
  if (reasons.has('unreachable') || reasons.has('timeout') || reasons.has('registry-error'))
    return 'check that the registry is up and reachable from here; winfleet tries again';
  if (reasons.has('not-found'))
    return 'check the reference, or push the payload again with winfleet payload push';
  return 'check the registry and its credentials';
}

/**
 * The result of `attempt` on the first target where it works, tried in order. A failure on
 * one target moves on to the next; when all fail, the error names each target and why.
 * @package
 */
export async function firstThatWorks<T>(
  targets: readonly PayloadTarget[],
  subject: string,
  attempt: (target: PayloadTarget) => Promise<T>,
): Promise<T> {
  const failures: Failure[] = [];
  for (const target of targets) {
    try {
      return await attempt(target);
    } catch (error) {
      // A failure here (a full disk, a locked file) is no reason to ask another registry.
      if (!isSourceError(error)) throw error;
      failures.push({ target, error });
    }
  }
  const why = failures
    .map((f) => `${targetName(f.target)}: ${(f.error as Error)?.message ?? String(f.error)}`)
    .join('; ');
  const transient = failures.some((f) => isTransient(f.error));
  const registry = targets.find((t) => !t.mirror) ?? targets[0];
  const reason = failures
    .map((f) => (isRegistryLookupError(f.error) ? f.error.details.reason : undefined))
    .find((r) => r !== undefined);
  throw new WinfleetError(
    transient ? 'WF_PAYLOAD_DOWNLOAD' : 'WF_PAYLOAD_INVALID',
    `Cannot get ${subject}: ${why}; ${fixFor(failures)}`,
    {
      cause: failures.at(-1)?.error,
      details: { registry: registry?.endpoint.origin, ...(reason ? { reason } : {}) },
    },
  );
}
