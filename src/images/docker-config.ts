/**
 * Registry credentials from Docker config JSON, the contents of `kubernetes.io/dockerconfigjson`
 * pull secrets (`{"auths": {...}}`) and of legacy `kubernetes.io/dockercfg` ones (the same map
 * without "auths"). Keys are matched to a registry host and repository as the kubelet does:
 * scheme and "/v1/" are ignored, `*.example.com` globs one host label, the port must be equal,
 * a key with a path ("registry/team") applies below it, and the most specific key wins.
 */

import { WinfleetError } from '../errors/catalog.ts';
import { canonicalRegistry } from './image-reference.ts';

/** What a registry is sent to authenticate. */
export interface RegistryCredentials {
  username?: string;
  password?: string;
  /** An OAuth2 refresh token ("identitytoken"), exchanged at the token endpoint. */
  identityToken?: string;
  /** A bearer token sent as is ("registrytoken"). */
  registryToken?: string;
}

/** One credential entry of a Docker config, with the key it was found under. */
export interface DockerConfigEntry {
  /** The key as written, e.g. "https://index.docker.io/v1/" or "*.azurecr.io". */
  key: string;
  credentials: RegistryCredentials;
}

interface ParsedKey {
  hostLabels: string[];
  port: string;
  path: string;
}

function fail(source: string, problem: string): WinfleetError {
  return new WinfleetError('WF_CONFIG_INVALID', `Invalid Docker config in ${source}: ${problem}`);
}

function optionalString(value: unknown, field: string, source: string): string | undefined {
  if (value === undefined || value === null || value === '') return undefined;
  if (typeof value !== 'string') throw fail(source, `${field} must be a string`);
  return value;
}

function decodeAuth(auth: string, field: string, source: string): [string, string] {
  const decoded = Buffer.from(auth, 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (!/^[A-Za-z0-9+/=\s]+$/.test(auth) || colon < 0) {
    throw fail(source, `${field} must be base64 of "username:password"`);
  }
  return [decoded.slice(0, colon), decoded.slice(colon + 1)];
}

function parseEntry(key: string, value: unknown, source: string): DockerConfigEntry {
  const where = `auths["${key}"]`;
  if (!value || typeof value !== 'object' || Array.isArray(value)) {
    throw fail(source, `${where} must be an object with "auth" or "username" and "password"`);
  }
  const entry = value as Record<string, unknown>;
  const credentials: RegistryCredentials = {};
  const auth = optionalString(entry.auth, `${where}.auth`, source);
  if (auth !== undefined) {
    [credentials.username, credentials.password] = decodeAuth(auth, `${where}.auth`, source);
  } else {
    const username = optionalString(entry.username, `${where}.username`, source);
    const password = optionalString(entry.password, `${where}.password`, source);
    if (username !== undefined) credentials.username = username;
    if (password !== undefined) credentials.password = password;
  }
  const identityToken = optionalString(entry.identitytoken, `${where}.identitytoken`, source);
  const registryToken = optionalString(entry.registrytoken, `${where}.registrytoken`, source);
  if (identityToken !== undefined) credentials.identityToken = identityToken;
  if (registryToken !== undefined) credentials.registryToken = registryToken;
  if (Object.keys(credentials).length === 0) {
    throw fail(source, `${where} has no "auth", "username"/"password" or token`);
  }
  return { key, credentials };
}

/**
 * Reads the entries of one Docker config document: a parsed object or its JSON text. Throws a
 * TypeError naming `source` (e.g. "pull secret default/regcred") and the bad field.
 */
export function parseDockerConfig(
  document: unknown,
  source = 'Docker config',
): DockerConfigEntry[] {
  let doc = document;
  if (typeof doc === 'string' || doc instanceof Uint8Array) {
    const text = typeof doc === 'string' ? doc : Buffer.from(doc).toString('utf8');
    try {
      doc = JSON.parse(text);
    } catch (error) {
      throw fail(source, `not JSON (${(error as Error).message})`);
    }
  }
  if (!doc || typeof doc !== 'object' || Array.isArray(doc)) {
    throw fail(source, 'must be a JSON object like {"auths": {"registry.example.com": {...}}}');
  }
  const record = doc as Record<string, unknown>;
  // .dockerconfigjson has "auths"; the legacy .dockercfg is the same map at the top level.
  const auths = 'auths' in record ? record.auths : record;
  if (!auths || typeof auths !== 'object' || Array.isArray(auths)) {
    throw fail(source, '"auths" must be an object keyed by registry');
  }
  return Object.entries(auths as Record<string, unknown>).map(([key, value]) =>
    parseEntry(key, value, source),
  );
}

function parseKey(key: string): ParsedKey | undefined {
  let rest = key.trim().replace(/^[a-z][a-z0-9+.-]*:\/\//i, '');
  const slash = rest.indexOf('/');
  let path = slash >= 0 ? rest.slice(slash) : '';
  rest = slash >= 0 ? rest.slice(0, slash) : rest;
  const match = /^(.+?)(?::(\d+))?$/.exec(rest);
  if (!match) return undefined;
  let host = match[1]!.toLowerCase();
  if (!host.includes('*')) host = canonicalRegistry(host);
  // "https://index.docker.io/v1/" is Docker Hub's key; "/v1/" and "/v2/" are API paths.
  path = path.replace(/^\/v[12]\/?/, '/').replace(/\/+$/, '');
  return { hostLabels: host.split('.'), port: match[2] ?? '', path };
}

function globMatches(pattern: string, label: string): boolean {
  if (!pattern.includes('*')) return pattern === label;
  const regex = new RegExp(
    `^${pattern.replace(/[.+?^${}()|[\]\\]/g, '\\$&').replaceAll('*', '[^.]*')}$`,
  );
  return regex.test(label);
}

/** How specifically `key` matches `registry/repository`, or -1 when it does not. */
function matchScore(key: ParsedKey, registry: string, repository: string): number {
  const [host, port = ''] = splitHostPort(canonicalRegistry(registry));
  if (key.port !== port) return -1;
  const labels = host.split('.');
  if (labels.length !== key.hostLabels.length) return -1;
  if (!key.hostLabels.every((pattern, i) => globMatches(pattern, labels[i]!))) return -1;
  const target = `/${repository}`;
  if (key.path !== '' && target !== key.path && !target.startsWith(`${key.path}/`)) return -1;
  const globs = key.hostLabels.filter((l) => l.includes('*')).length;
  return key.path.length * 100 + (10 - Math.min(globs, 9));
}

function splitHostPort(registry: string): [string, string?] {
  if (registry.startsWith('[')) {
    const end = registry.indexOf(']');
    const port = registry.slice(end + 1).replace(/^:/, '');
    return [registry.slice(0, end + 1), port || undefined];
  }
  const colon = registry.lastIndexOf(':');
  return colon < 0 ? [registry] : [registry.slice(0, colon), registry.slice(colon + 1)];
}

/** A Docker config document to search, with a name for messages. */
export interface DockerConfigSource {
  /** Where it came from, e.g. "secret default/regcred". */
  source: string;
  /** The decoded `.dockerconfigjson` (object or JSON text). */
  config: unknown;
}

/** The outcome of a credential search: the credentials and which key gave them. */
export interface CredentialMatch {
  credentials: RegistryCredentials;
  source: string;
  key: string;
}

/**
 * The credentials for `repository` on `registry` from `configs`, searched in order; the most
 * specific key wins and the first document wins a tie. Documents that cannot be read are
 * skipped and their problems appended to `problems` when given.
 */
export function findRegistryCredentials(
  registry: string,
  repository: string,
  configs: readonly DockerConfigSource[],
  problems?: string[],
): CredentialMatch | undefined {
  let best: (CredentialMatch & { score: number }) | undefined;
  for (const { source, config } of configs) {
    let entries: DockerConfigEntry[];
    try {
      entries = parseDockerConfig(config, source);
    } catch (error) {
      problems?.push((error as Error).message);
      continue;
    }
    for (const entry of entries) {
      const key = parseKey(entry.key);
      if (!key) continue;
      const score = matchScore(key, registry, repository);
      if (score >= 0 && (!best || score > best.score)) {
        best = { credentials: entry.credentials, source, key: entry.key, score };
      }
    }
  }
  if (!best) return undefined;
  const { score: _score, ...match } = best;
  return match;
}
