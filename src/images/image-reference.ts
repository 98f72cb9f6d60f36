/**
 * Container image references as pods write them ("nginx", "mcr.microsoft.com/windows/servercore:
 * ltsc2022", "127.0.0.1:5000/app@sha256:…"), parsed and normalised the way the container runtime
 * does (distribution's reference grammar): Docker Hub is the default registry, its single-name
 * images live under "library/", and an image with neither tag nor digest means ":latest".
 */
import { WinfleetError } from '../errors/catalog.ts';

/** A normalised image reference. */
export interface ImageReference {
  /** Registry host with optional port: "docker.io", "mcr.microsoft.com", "127.0.0.1:5000". */
  registry: string;
  /** Repository path inside the registry: "library/nginx", "windows/servercore". */
  repository: string;
  /** The tag; "latest" when the reference had neither tag nor digest. */
  tag?: string;
  /** "algorithm:hex"; when present it decides what is pulled and the tag is informative. */
  digest?: string;
}

/** Docker Hub's name in references; its API lives at registry-1.docker.io. */
export const dockerHub = 'docker.io';
const dockerHubAliases = new Set(['docker.io', 'index.docker.io', 'registry-1.docker.io']);

const domainComponent = '(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])';
const registryPattern = new RegExp(
  `^(?:${domainComponent}(?:\\.${domainComponent})*|\\[[a-fA-F0-9:]+\\])(?::[0-9]{1,5})?$`,
);
const pathComponent = /^[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*$/;
const tagPattern = /^[\w][\w.-]{0,127}$/;
const digestPattern = /^[a-z0-9]+(?:[.+_-][a-z0-9]+)*:[a-zA-Z0-9=_-]+$/;
const knownDigestLengths: Record<string, number> = { sha256: 64, sha384: 96, sha512: 128 };
const maxNameLength = 255;

/** The API host of a registry: Docker Hub's aliases all mean registry-1.docker.io. */
export function registryApiHost(registry: string): string {
  return dockerHubAliases.has(registry) ? 'registry-1.docker.io' : registry;
}

/** The canonical name of a registry host: Docker Hub's aliases become "docker.io". */
export function canonicalRegistry(host: string): string {
  const lower = host.toLowerCase();
  return dockerHubAliases.has(lower) ? dockerHub : lower;
}

function invalid(reference: string, problem: string): WinfleetError {
  return new WinfleetError(
    'WF_CONFIG_INVALID',
    `Invalid image reference "${reference}": ${problem}`,
  );
}

/** Checks a digest's form ("sha256:" and 64 lowercase hex digits); throws a WinfleetError. */
export function checkDigest(digest: string, reference = digest): void {
  if (!digestPattern.test(digest)) {
    throw invalid(reference, `digest "${digest}" is not "algorithm:hex", e.g. "sha256:<64 hex>"`);
  }
  const [algorithm, hex] = digest.split(':') as [string, string];
  const length = knownDigestLengths[algorithm];
  if (length === undefined) {
    throw invalid(
      reference,
      `digest algorithm "${algorithm}" is not supported; use sha256, sha384 or sha512`,
    );
  }
  if (hex.length !== length || !/^[a-f0-9]+$/.test(hex)) {
    throw invalid(
      reference,
      `digest "${digest}" must have ${length} lowercase hex digits after "${algorithm}:"`,
    );
  }
}

/**
 * Parses and normalises an image reference. Throws a WinfleetError that quotes the reference and
 * says which part is wrong.
 *
 * @example parseImageReference('nginx') // { registry: 'docker.io', repository: 'library/nginx', tag: 'latest' }
 */
export function parseImageReference(reference: string): ImageReference {
  if (typeof reference !== 'string' || reference === '') {
    throw invalid(String(reference ?? ''), 'the image name is empty; write e.g. "nginx:1.27"');
  }
  if (reference !== reference.trim() || /\s/.test(reference)) {
    throw invalid(reference, 'it contains whitespace');
  }
  let rest = reference;
  let digest: string | undefined;
  const at = rest.indexOf('@');
  if (at >= 0) {
    digest = rest.slice(at + 1);
    rest = rest.slice(0, at);
    checkDigest(digest, reference);
  }
  let tag: string | undefined;
  const colon = rest.lastIndexOf(':');
  if (colon > rest.lastIndexOf('/')) {
    tag = rest.slice(colon + 1);
    rest = rest.slice(0, colon);
    if (!tagPattern.test(tag)) {
      throw invalid(
        reference,
        `tag "${tag}" must be 1-128 letters, digits, "_", "." or "-" and not start with "." or "-"`,
      );
    }
  }
  if (rest === '') throw invalid(reference, 'the repository name is missing');

  let registry = dockerHub;
  let path = rest;
  const slash = rest.indexOf('/');
  if (slash >= 0) {
    const first = rest.slice(0, slash);
    // Like the runtime: the first part is a registry when it looks like a host name.
    if (
      first.includes('.') ||
      first.includes(':') ||
      first === 'localhost' ||
      first !== first.toLowerCase()
    ) {
      if (!registryPattern.test(first)) {
        throw invalid(
          reference,
          `registry "${first}" is not a host name or address with optional port`,
        );
      }
      registry = canonicalRegistry(first);
      path = rest.slice(slash + 1);
    }
  }
  const components = path.split('/');
  for (const component of components) {
    if (component === '') {
      throw invalid(reference, `repository "${path}" has an empty path component`);
    }
    if (!pathComponent.test(component)) {
      const hint =
        component !== component.toLowerCase() ? `; write "${component.toLowerCase()}"` : '';
      throw invalid(
        reference,
        `repository component "${component}" must be lowercase letters and digits separated by ".", "_", "__" or "-"${hint}`,
      );
    }
  }
  if (registry === dockerHub && components.length === 1) path = `library/${path}`;
  if (`${registry}/${path}`.length > maxNameLength) {
    throw invalid(reference, `the name is longer than ${maxNameLength} characters`);
  }
  if (tag === undefined && digest === undefined) tag = 'latest';
  return {
    registry,
    repository: path,
    ...(tag !== undefined ? { tag } : {}),
    ...(digest !== undefined ? { digest } : {}),
  };
}

/** The fully qualified form: "registry/repository[:tag][@digest]". */
export function formatImageReference(ref: ImageReference): string {
  return `${ref.registry}/${ref.repository}${ref.tag !== undefined ? `:${ref.tag}` : ''}${
    ref.digest !== undefined ? `@${ref.digest}` : ''
  }`;
}
