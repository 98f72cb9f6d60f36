/**
 * The private key `hosts add --ssh-key-file` puts in a Secret: exactly one unencrypted
 * OpenSSH or PEM (PKCS#1 RSA, SEC1 EC) private key, as the operator's SSH client (ssh2) reads
 * it. Anything else is refused before the cluster is touched: a public key, an encrypted key
 * (the operator has no passphrase), a file with two keys (which one would be used is not
 * obvious), text around the key. Messages never quote the file's content.
 */
import ssh2 from 'ssh2';

/** The most a key file may hold: an RSA 16384-bit OpenSSH key is about 12 KiB. */
export const maxKeyFileBytes = 64 * 1024;

const block =
  /^-----BEGIN (OPENSSH|RSA|EC) PRIVATE KEY-----\r?\n([\s\S]*?)\r?\n-----END \1 PRIVATE KEY-----\r?\n?$/;

/** Why `text` is not a key `hosts add` accepts, or the key's type ("ssh-ed25519", …). */
export function checkPrivateKey(
  data: Buffer,
  source: string,
): { ok: true; type: string; text: string } | { ok: false; problem: string } {
  const fix = `give an unencrypted OpenSSH or PEM private key (e.g. ssh-keygen -t ed25519 -N '' -f key; pass the file without .pub)`;
  if (data.length === 0) return { ok: false, problem: `${source} is empty; ${fix}` };
  if (data.length > maxKeyFileBytes)
    return {
      ok: false,
      problem: `${source} is ${data.length} bytes, more than any private key (${maxKeyFileBytes}); ${fix}`,
    };
  const text = data.toString('utf8');
  if (text.includes('\uFFFD') || text.includes('\0'))
    return { ok: false, problem: `${source} is not text; ${fix}` };
  const trimmed = text.replace(/^\s+/, '').replace(/\s+$/, '\n');
  if (/^(ssh-|ecdsa-sha2-|sk-)\S+ [A-Za-z0-9+/=]+/.test(trimmed) || /PUBLIC KEY-----/.test(text))
    return { ok: false, problem: `${source} holds a public key, not a private key; ${fix}` };
  const begins = text.match(/-----BEGIN [A-Z0-9 ]+-----/g) ?? [];
  if (begins.length > 1)
    return {
      ok: false,
      problem: `${source} holds ${begins.length} PEM blocks; put exactly one private key in the file`,
    };
  if (/ENCRYPTED/.test(text))
    return {
      ok: false,
      problem: `${source} holds an encrypted private key; the operator has no passphrase: decrypt a copy with ssh-keygen -p -N '' -f COPY and pass that`,
    };
  const match = block.exec(trimmed);
  if (!match)
    return {
      ok: false,
      problem: `${source} is not a single "-----BEGIN OPENSSH|RSA|EC PRIVATE KEY-----" block (a PKCS#8 "BEGIN PRIVATE KEY" file is converted with ssh-keygen -p -N '' -f COPY); ${fix}`,
    };
  if (!/^[A-Za-z0-9+/=\r\n]+$/.test(match[2]!))
    return { ok: false, problem: `${source}: the key block holds more than base64 text; ${fix}` };
  const parsed = ssh2.utils.parseKey(trimmed);
  if (parsed instanceof Error) {
    const encrypted = /passphrase/i.test(parsed.message);
    return {
      ok: false,
      problem: encrypted
        ? `${source} holds an encrypted private key; the operator has no passphrase: decrypt a copy with ssh-keygen -p -N '' -f COPY and pass that`
        : `${source} cannot be read as an SSH private key (${parsed.message}); ${fix}`,
    };
  }
  if (Array.isArray(parsed))
    return {
      ok: false,
      problem: `${source} holds ${parsed.length} keys; put exactly one private key in the file`,
    };
  if (!parsed.isPrivateKey())
    return { ok: false, problem: `${source} holds a public key, not a private key; ${fix}` };
  return { ok: true, type: parsed.type, text: trimmed };
}
