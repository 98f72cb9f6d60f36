/**
 * References to payload artifacts, in the image reference grammar (image-reference.ts): a push
 * names a tag (`registry/repo:tag`), and everything that reads a payload names its digest
 * (`registry/repo[:tag]@sha256:…`): a tag can be moved, a digest pins the exact bytes, so the
 * operator and the agents all install the same files.
 */

import { WinfleetError } from '../../errors/catalog.ts';
import { parseImageReference } from '../../images/image-reference.ts';
import type { PayloadRepository } from './payload-targets.ts';

/** A payload pinned by digest. */
export interface PinnedPayloadReference extends PayloadRepository {
  digest: string;
  /** Informative only. */
  tag?: string;
}

/** "registry/repository@digest". */
export function formatPinnedReference(ref: PayloadRepository & { digest: string }): string {
  return `${ref.registry}/${ref.repository}@${ref.digest}`;
}

function parse(text: string, flag: string) {
  try {
    return parseImageReference(text);
  } catch (error) {
    throw new WinfleetError('WF_FLAG_INVALID', `${flag}: ${(error as Error).message}`);
  }
}

/**
 * Parses a pinned reference; a tag alone is refused, saying how to get the digest. Throws a
 * TypeError naming `flag`.
 */
export function parsePinnedReference(
  text: string,
  flag = '--payload-image',
): PinnedPayloadReference {
  const ref = parse(text, flag);
  if (ref.digest === undefined) {
    throw new WinfleetError(
      'WF_FLAG_INVALID',
      `${flag}: "${text}" names no digest; a tag can be moved, so give the payload by digest: "${ref.registry}/${ref.repository}@sha256:…", as winfleet payload push prints it`,
    );
  }
  if (!ref.digest.startsWith('sha256:')) {
    throw new WinfleetError(
      'WF_FLAG_INVALID',
      `${flag}: "${text}" has a ${ref.digest.split(':')[0]} digest; payload artifacts are pinned by sha256`,
    );
  }
  return {
    registry: ref.registry,
    repository: ref.repository,
    digest: ref.digest,
    ...(ref.tag !== undefined ? { tag: ref.tag } : {}),
  };
}

/** Parses where a push goes: a repository and a tag, no digest. Throws a WinfleetError. */
export function parsePushReference(
  text: string,
  what = 'the reference',
): PayloadRepository & { tag: string } {
  const ref = parse(text, what);
  if (ref.digest !== undefined)
    throw new WinfleetError(
      'WF_FLAG_INVALID',
      `${what}: "${text}" has a digest; push to a tag ("registry/repo:tag"), and winfleet prints the digest`,
    );
  const path = text.slice(text.lastIndexOf('/') + 1);
  if (!path.includes(':'))
    throw new WinfleetError(
      'WF_FLAG_INVALID',
      `${what}: "${text}" has no tag; write e.g. "${text}:1.36.5-wf.1"`,
    );
  return { registry: ref.registry, repository: ref.repository, tag: ref.tag! };
}
