/**
 * Which kubelet CSRs winfleet approves — only for hosts it knows, and only exactly what a
 * kubelet on that host should ask for:
 *
 * Client certificates (kubernetes.io/kube-apiserver-client-kubelet): requested with the
 * bootstrap token winfleet issued to a known WindowsHost; a subject that is byte for byte
 * what a kubelet's Go x509 writes for O=system:nodes, CN=system:node:<that host's node name>
 * (kube-controller-manager reads a subject as Go does — the last CN wins — so anything else,
 * such as a second CN, could name another node); no SANs or other extensions; usages within
 * digital signature, key encipherment, client auth; and no Node of that name yet. A token
 * winfleet issued to no host but recorded for a join by command (`winfleet join-command`) is
 * decided by pull-join-policy.ts on the same subject rules.
 *
 * Client certificate renewals (the same signer, requested by system:node:<name> with its
 * current certificate): only for a Node a known WindowsHost owns (its status.nodeName) and that
 * carries that host's identity annotation; the same exact subject, for the requester's own name.
 * Renewals of other nodes are left alone (kube-controller-manager approves them where the
 * cluster binds selfnodeclient; winfleet creates no such binding).
 *
 * Serving certificates (kubernetes.io/kubelet-serving): requested by that node itself, whose
 * Node carries its host's identity; the same exact subject; IP and DNS SANs among the host's
 * pinned serving addresses and none of the refused ones (serving-addresses.ts); nothing else.
 *
 * Everything else is left alone (another approver may own it) — the bug WMCO once had was
 * approving CSRs of every node.
 */
import type * as k8s from '@kubernetes/client-node';
import { hostAnnotation } from '../../api/node-annotations.ts';
import { servingAddressesAnnotation, type WindowsHost } from '../../api/windows-host.ts';
import { carriesIdentity } from '../../fleet/node-claims.ts';
import {
  allowedServingAddresses,
  type ClusterNetwork,
  canonicalAddress,
  refusedAddressProblem,
  vouchedAddress,
} from '../../fleet/serving-addresses.ts';
import { bootstrapGroup } from '../../join/bootstrap-tokens.ts';
import { quoteValue } from '../../pki/distinguished-name.ts';
import { type ApiServerNames, apiServerNameSource } from './api-server-names.ts';
import type { CsrDecision, CsrRequest } from './csr-request.ts';
import {
  clientCertificateProblem,
  extrasProblem,
  nodeNameProblem,
  subjectProblem,
} from './kubelet-certificate-rules.ts';
import { decidePullJoin, type PullJoinLookup } from './pull-join-policy.ts';

export { extrasProblem, nodeNameProblem } from './kubelet-certificate-rules.ts';

/** @package */
export const clientSigner = 'kubernetes.io/kube-apiserver-client-kubelet';
/** @package */
export const servingSigner = 'kubernetes.io/kubelet-serving';

/** @package */
export interface CsrLookup {
  /** The WindowsHost a winfleet bootstrap token id was issued to. */
  hostForToken(tokenId: string): Promise<WindowsHost | undefined>;
  /** The WindowsHosts (not being deleted) whose status names this node. */
  hostsForNode(nodeName: string): WindowsHost[];
  /** The Node of this name, if there is one. */
  node(nodeName: string): k8s.V1Node | undefined;
  /** The Node other than `exceptNode` holding `address` (canonical) as name or address. */
  nodeHolding(address: string, exceptNode: string): string | undefined;
  /** The cluster's Service and pod CIDRs and domain, and hosts.servingDnsSuffixes. */
  network(): ClusterNetwork;
  /** Every name and address of the API server (api-server-names.ts); throws when unknown. */
  apiServerNames(): Promise<ApiServerNames>;
  /** Joins by command (pull-join-policy.ts); without it, tokens of no known host are denied. */
  pullJoin?: PullJoinLookup;
}

const servingUsages = new Set(['digital signature', 'key encipherment', 'server auth']);

function unparsable(request: CsrRequest, host: WindowsHost): CsrDecision {
  const why = request.parseProblem ? `: ${request.parseProblem}` : '';
  return { action: 'deny', reason: `the request is not a valid PKCS#10 CSR${why}`, host };
}

/** @package */
export async function decideKubeletCsr(
  request: CsrRequest,
  lookup: CsrLookup,
): Promise<CsrDecision> {
  if (request.signerName === clientSigner) return decideClient(request, lookup);
  if (request.signerName === servingSigner) return await decideServing(request, lookup);
  return { action: 'ignore', reason: `signer ${request.signerName} is not a kubelet signer` };
}

async function decideClient(request: CsrRequest, lookup: CsrLookup): Promise<CsrDecision> {
  const renewal = /^system:node:(.+)$/.exec(request.username);
  if (renewal && request.groups.includes('system:nodes')) {
    return decideRenewal(request, renewal[1]!, lookup);
  }
  const match = /^system:bootstrap:([a-z0-9]{6})$/.exec(request.username);
  if (!match || !request.groups.includes(bootstrapGroup)) {
    return {
      action: 'ignore',
      reason: `requested by ${request.username}, not with a winfleet bootstrap token`,
    };
  }
  const host = await lookup.hostForToken(match[1]!);
  if (!host && lookup.pullJoin) return decidePullJoin(request, match[1]!, lookup.pullJoin);
  if (!host)
    return {
      action: 'deny',
      reason: `bootstrap token ${match[1]} belongs to no known WindowsHost`,
    };
  const nodeName = host.status?.nodeName;
  if (!nodeName)
    return { action: 'retry', reason: `WindowsHost ${host.metadata.name} has no node name yet` };
  if (!request.parsed) return unparsable(request, host);
  const problem =
    nodeNameProblem(nodeName) ??
    subjectProblem(request.parsed, nodeName) ??
    extrasProblem(request.parsed);
  if (problem) return { action: 'deny', reason: problem, host };
  const clientProblem = clientCertificateProblem(request.usages, request.parsed);
  if (clientProblem) return { action: 'deny', reason: clientProblem, host };
  if (lookup.node(nodeName)) {
    return {
      action: 'deny',
      reason: `Node ${nodeName} already exists; a bootstrap token cannot take over an existing node`,
      host,
    };
  }
  return {
    action: 'approve',
    reason: `kubelet client certificate for Node ${nodeName} of WindowsHost ${host.metadata.namespace}/${host.metadata.name}`,
    host,
  };
}

/**
 * A node renewing its client certificate with the one it has. Only a node of a known host,
 * whose Node carries that host's identity, and only for its own name.
 */
function decideRenewal(request: CsrRequest, nodeName: string, lookup: CsrLookup): CsrDecision {
  const owner = owningHost(nodeName, lookup);
  if ('action' in owner) return owner;
  const { host } = owner;
  if (!request.parsed) return unparsable(request, host);
  const problem =
    nodeNameProblem(nodeName) ??
    subjectProblem(request.parsed, nodeName) ??
    extrasProblem(request.parsed) ??
    clientCertificateProblem(request.usages, request.parsed);
  if (problem) {
    return { action: 'deny', reason: `renewal by Node ${nodeName}: ${problem}`, host };
  }
  return {
    action: 'approve',
    reason: `renewal of Node ${nodeName}'s own client certificate (WindowsHost ${host.metadata.namespace}/${host.metadata.name})`,
    host,
  };
}

/**
 * The known WindowsHost that owns `nodeName`, when its Node carries that host's identity;
 * otherwise the CSR is not winfleet's to decide (the name may be someone else's Node that a
 * WindowsHost merely claims, and denying would break that node's certificates). The
 * controller looks again when the Node's annotations change.
 * @package
 */
export function owningHost(
  nodeName: string,
  lookup: CsrLookup,
): { host: WindowsHost } | Extract<CsrDecision, { action: 'ignore' }> {
  const hosts = lookup.hostsForNode(nodeName);
  if (hosts.length === 0) {
    return { action: 'ignore', reason: `Node ${nodeName} is not a winfleet host` };
  }
  const node = lookup.node(nodeName);
  const host = node && hosts.find((h) => carriesIdentity(node, h));
  if (!host) {
    const carried = node?.metadata?.annotations?.[hostAnnotation];
    return {
      action: 'ignore',
      reason: `Node ${nodeName} does not carry the identity of a WindowsHost that names it (${hostAnnotation} is ${carried === undefined ? 'absent' : quoteValue(carried)})`,
    };
  }
  return { host };
}

async function decideServing(request: CsrRequest, lookup: CsrLookup): Promise<CsrDecision> {
  const match = /^system:node:(.+)$/.exec(request.username);
  if (!match || !request.groups.includes('system:nodes')) {
    return { action: 'ignore', reason: `requested by ${request.username}, not by a node` };
  }
  const nodeName = match[1]!;
  const owner = owningHost(nodeName, lookup);
  if ('action' in owner) return owner;
  const { host } = owner;
  if (!request.parsed) return unparsable(request, host);
  const problem =
    nodeNameProblem(nodeName) ??
    subjectProblem(request.parsed, nodeName) ??
    extrasProblem(request.parsed);
  if (problem) return { action: 'deny', reason: problem, host };
  const { dnsNames, ipAddresses, emailAddresses, uris } = request.parsed;
  const addressProblem = servingSansProblem(
    host,
    nodeName,
    [...ipAddresses, ...dnsNames],
    lookup,
    await lookup.apiServerNames(),
  );
  if (addressProblem) return { action: 'deny', reason: addressProblem, host };
  if (emailAddresses.length + uris.length > 0)
    return { action: 'deny', reason: 'a serving certificate carries no email or URI SANs', host };
  const extra = request.usages.filter((u) => !servingUsages.has(u));
  if (extra.length > 0 || !request.usages.includes('server auth')) {
    return {
      action: 'deny',
      reason: `usages [${request.usages.join(', ')}] are not within [${[...servingUsages].join(', ')}] with server auth`,
      host,
    };
  }
  return { action: 'approve', reason: `kubelet serving certificate for Node ${nodeName}`, host };
}

/** Why the SANs of `nodeName`'s serving certificate are not all allowed (serving-addresses.ts). */
function servingSansProblem(
  host: WindowsHost,
  nodeName: string,
  sans: string[],
  lookup: CsrLookup,
  apiServer: ApiServerNames,
): string | undefined {
  const context = {
    network: lookup.network(),
    specAddress: vouchedAddress(host),
    nodeHolding: (address: string) => lookup.nodeHolding(address, nodeName),
    nodeName,
    apiServerName: (address: string) => apiServerNameSource(apiServer, address),
  };
  const allowed = allowedServingAddresses(host, nodeName);
  const problems: string[] = [];
  for (const san of sans) {
    const address = canonicalAddress(san);
    const refused = refusedAddressProblem(address, context);
    if (refused) problems.push(refused);
    else if (!allowed.has(address)) {
      problems.push(`${address} is not among the host's serving addresses`);
    }
  }
  if (problems.length === 0) return undefined;
  return `serving certificate SANs refused: ${problems.join('; ')} (allowed: ${[...allowed].join(', ')}; an admin changes them with the ${servingAddressesAnnotation} annotation on the WindowsHost)`;
}
