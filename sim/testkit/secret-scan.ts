/**
 * Looking for secrets where they must not be: turns each secret into the fragments a leak
 * would show (the whole value, each line of a PEM body, windows of its base64 form) and
 * searches captured text for them. Also harvests the secrets a simulated host keeps on its
 * disk (private keys, kubeconfig tokens and client keys), so a test need not know every path.
 */
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';

/** One fragment to search for, and which secret it comes from. */
export interface Needle {
  secret: string;
  fragment: string;
}

/** A fragment found in a log. */
export interface Leak extends Needle {
  log: string;
  line: string;
}

// Shorter fragments could match by chance in unrelated text (hashes, UIDs).
const minFragment = 16;
// A logged substring of a base64 value at least twice this long holds a whole window.
const base64Window = 48;

const pemBlock = /-----BEGIN ([A-Z0-9 ]*PRIVATE KEY)-----([\s\S]*?)-----END \1-----/g;

function base64Windows(secret: string, value: string): Needle[] {
  const encoded = Buffer.from(value).toString('base64');
  const needles: Needle[] = [];
  for (let at = 0; at + base64Window <= encoded.length; at += base64Window) {
    needles.push({ secret, fragment: encoded.slice(at, at + base64Window) });
  }
  return needles;
}

/**
 * The fragments of `value` a leak would show: the value itself when it is no PEM block,
 * else each body line; plus windows of the value's base64 form (as Secret data holds it).
 */
export function needlesFor(secret: string, value: string): Needle[] {
  const needles: Needle[] = [];
  const blocks = [...value.matchAll(pemBlock)];
  if (blocks.length === 0) {
    if (value.length >= minFragment) needles.push({ secret, fragment: value });
  }
  for (const [, , body] of blocks) {
    for (const line of body!.split(/\r?\n/)) {
      if (line.trim().length >= minFragment) needles.push({ secret, fragment: line.trim() });
    }
  }
  return [...needles, ...base64Windows(secret, value)];
}

/** Every needle found in `logs` (name → text), with the line it was found on. */
export function findLeaks(logs: ReadonlyMap<string, string>, needles: readonly Needle[]): Leak[] {
  const leaks: Leak[] = [];
  for (const [log, text] of logs) {
    for (const needle of needles) {
      const at = text.indexOf(needle.fragment);
      if (at === -1) continue;
      const start = text.lastIndexOf('\n', at) + 1;
      const end = text.indexOf('\n', at);
      leaks.push({ ...needle, log, line: text.slice(start, end === -1 ? undefined : end) });
    }
  }
  return leaks;
}

/** Files under `dir` (recursively), as path → content. */
export async function readTree(dir: string): Promise<Map<string, Buffer>> {
  const files = new Map<string, Buffer>();
  const entries = await readdir(dir, { recursive: true, withFileTypes: true });
  for (const entry of entries) {
    if (!entry.isFile()) continue;
    const path = join(entry.parentPath, entry.name);
    files.set(path, await readFile(path).catch(() => Buffer.alloc(0)));
  }
  return files;
}

/**
 * Secrets in a host's files: private key PEM blocks, and the `token:` and `client-key-data:`
 * values of kubeconfigs and the bootstrap configuration (as name → value).
 */
export function secretsInFiles(files: ReadonlyMap<string, Buffer>): Map<string, string> {
  const secrets = new Map<string, string>();
  for (const [path, content] of files) {
    const text = content.toString('utf8');
    for (const [block] of text.matchAll(pemBlock)) secrets.set(`private key in ${path}`, block);
    for (const [, name, value] of text.matchAll(
      /"?(token|client-key-data|bootstrapToken)"?\s*:\s*"?([A-Za-z0-9+/=._-]{16,})"?/g,
    )) {
      const decoded =
        name === 'client-key-data' ? Buffer.from(value!, 'base64').toString() : value!;
      secrets.set(`${name} in ${path}`, decoded);
    }
  }
  return secrets;
}
