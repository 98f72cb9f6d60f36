/**
 * SSH key pairs for the simulated hosts and their tests. ssh2's generateKeyPairSync drops the
 * leading zero bytes of an ed25519 public key (about one key in 256), which makes a key no SSH
 * implementation accepts; such keys are drawn again.
 */
import ssh2 from 'ssh2';

export interface KeyPair {
  /** OpenSSH private key. */
  private: string;
  /** OpenSSH public key line. */
  public: string;
}

/** True when an ed25519 public key line carries the whole 32-byte key. */
function wholeEd25519(publicLine: string): boolean {
  // 51 bytes: a 4-byte length, "ssh-ed25519", another length, the 32-byte key.
  const blob = Buffer.from(publicLine.split(' ')[1] ?? '', 'base64');
  return blob.length === 51 && blob.readUInt32BE(15) === 32;
}

/** A usable key pair of `type` (ed25519 by default, or RSA 2048). */
export function generateSshKeyPair(type: 'ed25519' | 'rsa' = 'ed25519', comment?: string): KeyPair {
  if (type === 'rsa') return ssh2.utils.generateKeyPairSync('rsa', { bits: 2048, comment });
  for (;;) {
    const pair = ssh2.utils.generateKeyPairSync('ed25519', { comment });
    if (wholeEd25519(pair.public)) return pair;
  }
}
