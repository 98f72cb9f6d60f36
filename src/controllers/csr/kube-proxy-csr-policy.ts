/**
 * Which kube-proxy CSRs winfleet approves (identity: src/api/kube-proxy-identity.ts). The
 * signer kubernetes.io/kube-apiserver-client is shared with every other tool that issues API
 * client certificates, so winfleet decides only requests that name its kube-proxy identity: a
 * CN starting with "winfleet:kube-proxy:" or the O "winfleet:kube-proxies" anywhere in the
 * subject. Those it approves only when every check holds, and denies otherwise with the check
 * that failed:
 *
 * - requester: a node, system:node:<X> in the group system:nodes (its own credentials);
 * - node: X is a lowercase RFC 1123 name and the Node of a WindowsHost winfleet manages, which
 *   carries that host's identity (the same check as for kubelet certificates);
 * - subject: exactly O=winfleet:kube-proxies, CN=winfleet:kube-proxy:<X>, byte for byte as Go
 *   writes it (kube-controller-manager reads a subject as Go does: the last CN wins);
 * - no subject alternative names, no other extension or attribute;
 * - usages: exactly digital signature and client auth;
 * - lifetime: spec.expirationSeconds set, at most 30 days;
 * - key: ECDSA P-256 or P-384, or RSA of 2048 to 8192 bits.
 *
 * A request from a node of a WindowsHost whose Node does not carry the host's identity yet is
 * left pending: the controller looks again when the Node's annotations change.
 */
import {
  kubeProxyGroup,
  kubeProxySignerName,
  kubeProxyUsages,
  kubeProxyUserName,
  kubeProxyUserPrefix,
} from '../../api/kube-proxy-identity.ts';
import type { WindowsHost } from '../../api/windows-host.ts';
import type { ParsedCsr } from '../../pki/certificates.ts';
import {
  formatName,
  goNameDer,
  oidCommonName,
  oidOrganization,
  quoteValue,
  sameBytes,
} from '../../pki/distinguished-name.ts';
import type { CsrDecision, CsrRequest } from './csr-request.ts';
import {
  type CsrLookup,
  extrasProblem,
  nodeNameProblem,
  owningHost,
} from './kubelet-csr-policy.ts';

/** The longest lifetime approved: the agent asks for 7 days and renews at 70%. */
export const kubeProxyMaxExpirationSeconds = 30 * 24 * 3600;

/**
 * Whether a request of the kube-apiserver-client signer is winfleet's to decide: its subject
 * names kube-proxy's user prefix or group. An unreadable request is winfleet's when its bytes
 * hold either name (it is then denied).
 * @package
 */
export function isKubeProxyRequest(request: CsrRequest, rawRequest: Uint8Array): boolean {
  if (request.signerName !== kubeProxySignerName) return false;
  if (!request.parsed) {
    const bytes = Buffer.from(rawRequest);
    return bytes.includes(kubeProxyUserPrefix) || bytes.includes(kubeProxyGroup);
  }
  return request.parsed.subject.some((rdn) =>
    rdn.some(
      (a) =>
        (a.type === oidCommonName && a.value.startsWith(kubeProxyUserPrefix)) ||
        (a.type === oidOrganization && a.value === kubeProxyGroup),
    ),
  );
}

/** Why the requested key is not one winfleet accepts, or undefined when it is. */
export function keyProblem(parsed: ParsedCsr): string | undefined {
  const key = parsed.publicKey;
  if (!key) return 'the requested public key cannot be read';
  if (key.type === 'ec' && (key.namedCurve === 'prime256v1' || key.namedCurve === 'secp384r1')) {
    return undefined;
  }
  if (key.type === 'rsa' && key.modulusBits && key.modulusBits >= 2048 && key.modulusBits <= 8192) {
    return undefined;
  }
  const detail = key.namedCurve ?? (key.modulusBits ? `${key.modulusBits} bits` : 'no detail');
  return `the key is ${key.type} (${detail}); accepted are ECDSA P-256 or P-384 and RSA of 2048 to 8192 bits`;
}

/** Why the subject is not exactly kube-proxy's for `nodeName`. */
function subjectProblem(parsed: ParsedCsr, nodeName: string): string | undefined {
  const cn = kubeProxyUserName(nodeName);
  const expected = goNameDer({ organizations: [kubeProxyGroup], commonName: cn });
  if (sameBytes(parsed.subjectDer, expected)) return undefined;
  const attributes = parsed.subject.flat();
  const cns = attributes.filter((a) => a.type === oidCommonName).map((a) => a.value);
  const os = attributes.filter((a) => a.type === oidOrganization).map((a) => a.value);
  const others = attributes.filter((a) => a.type !== oidCommonName && a.type !== oidOrganization);
  let difference: string;
  if (cns.length !== 1 || cns[0] !== cn) {
    difference = `CN is ${cns.map(quoteValue).join(' and ') || 'missing'}; a node asks only for its own kube-proxy, CN "${cn}"`;
  } else if (os.length !== 1 || os[0] !== kubeProxyGroup) {
    difference = `O is ${os.map(quoteValue).join(' and ') || 'missing'}; kube-proxy's only group is "${kubeProxyGroup}"`;
  } else if (others.length > 0) {
    difference = `the subject has other fields (${others.map((a) => a.label).join(', ')})`;
  } else {
    difference = `subject ${formatName(parsed.subject)} is not in the form Go writes`;
  }
  return `${difference}; expected exactly O=${kubeProxyGroup}, CN=${cn}`;
}

function usagesProblem(usages: string[]): string | undefined {
  const wanted = [...kubeProxyUsages].sort();
  const given = [...usages].sort();
  if (given.length === wanted.length && given.every((u, i) => u === wanted[i])) return undefined;
  return `usages: [${usages.join(', ')}] are not exactly [${kubeProxyUsages.join(', ')}]`;
}

function lifetimeProblem(expirationSeconds: number | undefined): string | undefined {
  if (expirationSeconds !== undefined && expirationSeconds <= kubeProxyMaxExpirationSeconds) {
    return undefined;
  }
  return `lifetime: spec.expirationSeconds is ${expirationSeconds ?? 'not set'}; set it to at most ${kubeProxyMaxExpirationSeconds} (30 days)`;
}

/** A denial naming the check that failed. */
function deny(check: string, reason: string, host?: WindowsHost): CsrDecision {
  const decision = {
    action: 'deny' as const,
    check,
    reason: `kube-proxy certificate refused (${check}): ${reason}`,
  };
  return host ? { ...decision, host } : decision;
}

/** Decides a request isKubeProxyRequest accepted (see the module comment). */
export function decideKubeProxyCsr(request: CsrRequest, lookup: CsrLookup): CsrDecision {
  const requester = /^system:node:(.+)$/.exec(request.username);
  if (!requester || !request.groups.includes('system:nodes')) {
    return deny(
      'requester',
      `requested by ${quoteValue(request.username)} in groups [${request.groups.join(', ')}]; only a node asks for its kube-proxy's certificate, with its own credentials`,
    );
  }
  const nodeName = requester[1]!;
  const nameProblem = nodeNameProblem(nodeName);
  if (nameProblem) return deny('node', nameProblem);
  const owner = owningHost(nodeName, lookup);
  if ('action' in owner) {
    if (lookup.hostsForNode(nodeName).length > 0) return owner;
    return deny('node', `Node ${nodeName} is not the node of a WindowsHost winfleet manages`);
  }
  const { host } = owner;
  if (!request.parsed) {
    const why = request.parseProblem ? `: ${request.parseProblem}` : '';
    return deny('request', `not a valid PKCS#10 CSR${why}`, host);
  }
  const parsed = request.parsed;
  const { dnsNames, ipAddresses, emailAddresses, uris } = parsed;
  const sans = [...dnsNames, ...ipAddresses, ...emailAddresses, ...uris, ...parsed.otherNames];
  const checks: [string, string | undefined][] = [
    ['subject', subjectProblem(parsed, nodeName)],
    ['extensions', extrasProblem(parsed, "winfleet's kube-proxy")],
    [
      'subject alternative names',
      sans.length > 0 ? `a client certificate has none, got ${sans.join(', ')}` : undefined,
    ],
    ['usages', usagesProblem(request.usages)],
    ['lifetime', lifetimeProblem(request.expirationSeconds)],
    ['key', keyProblem(parsed)],
  ];
  for (const [check, problem] of checks) {
    if (problem) return deny(check, problem, host);
  }
  return {
    action: 'approve',
    reason: `kube-proxy client certificate for Node ${nodeName} of WindowsHost ${host.metadata.namespace}/${host.metadata.name}`,
    host,
  };
}
