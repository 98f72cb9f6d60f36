/**
 * The rules a kubelet's client certificate request must follow, shared by every way a kubelet
 * asks winfleet for one (a host joined over SSH, a renewal, a host joining by command): a
 * subject that is byte for byte what a kubelet's Go x509 writes for O=system:nodes,
 * CN=system:node:<name>; no extensions, attributes or SANs a kubelet never asks for; usages
 * within digital signature, key encipherment and client auth; a lowercase RFC 1123 node name.
 */
import type { ParsedCsr } from '../../pki/certificates.ts';
import { formatName, goNameDer, quoteValue, sameBytes } from '../../pki/distinguished-name.ts';

const clientUsages = new Set(['digital signature', 'key encipherment', 'client auth']);

/** A Kubernetes node name: a lowercase RFC 1123 subdomain. */
const nodeNamePattern = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/** @package */
export function nodeNameProblem(nodeName: string): string | undefined {
  if (nodeName.length <= 253 && nodeNamePattern.test(nodeName)) return undefined;
  return `node name ${quoteValue(nodeName)} is not a lowercase RFC 1123 name (a-z, 0-9, '-' and '.', at most 253 characters)`;
}

/**
 * Why the subject is not exactly the kubelet's for `nodeName`. The decision is the byte
 * comparison; the rest only finds words for the first difference.
 * @package
 */
export function subjectProblem(parsed: ParsedCsr, nodeName: string): string | undefined {
  const o = 'system:nodes';
  const cn = `system:node:${nodeName}`;
  if (sameBytes(parsed.subjectDer, goNameDer({ organizations: [o], commonName: cn }))) {
    return undefined;
  }
  const rdns = parsed.subject;
  const shown = `subject ${formatName(rdns)}`;
  const multiValued = rdns.findIndex((rdn) => rdn.length !== 1);
  const [first, second] = rdns.map((rdn) => rdn[0]!);
  let difference: string;
  if (rdns.length !== 2) difference = `${shown} has ${rdns.length} RDNs`;
  else if (multiValued >= 0)
    difference = `${shown}: RDN ${multiValued + 1} holds ${rdns[multiValued]!.length} attributes`;
  else if (first!.label !== 'O' || second!.label !== 'CN') difference = `${shown} is not O then CN`;
  else if (second!.value !== cn)
    difference = `CN is ${quoteValue(second!.value)}, expected "${cn}"`;
  else if (first!.value !== o) difference = `O is ${quoteValue(first!.value)}, expected "${o}"`;
  else if (first!.stringType !== 'PrintableString') difference = `O is a ${first!.stringType}`;
  else if (second!.stringType !== 'PrintableString') difference = `CN is a ${second!.stringType}`;
  else difference = `${shown} is not in the DER Go writes`;
  return `${difference}; a kubelet's subject is exactly O=${o}, CN=${cn}: one attribute per RDN, both PrintableString, as Go's x509 writes it`;
}

/** Attributes, extensions and SAN kinds no kubelet asks for. */
export function extrasProblem(parsed: ParsedCsr, who = 'a kubelet'): string | undefined {
  if (parsed.otherRequests.length > 0) {
    return `the CSR asks for ${parsed.otherRequests.join(', ')}, which ${who} never requests`;
  }
  if (parsed.otherNames.length > 0) {
    return `subject alternative names ${parsed.otherNames.join(', ')} are of kinds ${who} never requests`;
  }
  return undefined;
}

/** SANs or usages a kubelet client certificate never has. */
export function clientCertificateProblem(usages: string[], parsed: ParsedCsr): string | undefined {
  const { dnsNames, ipAddresses, emailAddresses, uris } = parsed;
  const sans = [...dnsNames, ...ipAddresses, ...emailAddresses, ...uris];
  if (sans.length > 0) {
    return `a client certificate has no subject alternative names, got ${sans.join(', ')}`;
  }
  const extra = usages.filter((u) => !clientUsages.has(u));
  if (extra.length > 0 || !usages.includes('client auth')) {
    return `usages [${usages.join(', ')}] are not within [${[...clientUsages].join(', ')}] with client auth`;
  }
  return undefined;
}
