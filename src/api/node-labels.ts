/**
 * Which Node labels a WindowsHost's spec.labels may carry: those a kubelet may set on its own
 * Node under the NodeRestriction admission plugin (kubernetes plugin/pkg/admission/noderestriction
 * getForbiddenLabels, k8s.io/kubelet/pkg/apis IsKubeletLabel). The operator labels a Pull host's
 * Node with its own credentials, which NodeRestriction does not limit, so without this rule
 * whoever may edit a WindowsHost would put administrator-only labels on a Node its machine
 * controls (`node-restriction.kubernetes.io/*`, the isolation labels workloads are pinned
 * with; `node-role.kubernetes.io/control-plane`). An SSH host's labels reach its kubelet's
 * --node-labels, where the kubelet and NodeRestriction refuse the same keys at registration.
 *
 * Refused: a key whose prefix is `node-restriction.kubernetes.io` or a subdomain of it; a key
 * whose prefix is `kubernetes.io` or `k8s.io` (or a subdomain) unless it is one of the labels a
 * kubelet sets itself (kubeletLabels) or its prefix is `kubelet.kubernetes.io` or
 * `node.kubernetes.io` (or a subdomain). Everything else passes.
 *
 * The CRD refuses them too (crds.ts, nodeLabelRules); the check before every Node patch stops
 * a WindowsHost stored before that rule.
 */

/** Labels a kubelet sets on its own Node (k8s.io/kubelet/pkg/apis kubeletLabels). */
export const kubeletLabels = [
  'kubernetes.io/hostname',
  'topology.kubernetes.io/zone',
  'topology.kubernetes.io/region',
  'failure-domain.beta.kubernetes.io/zone',
  'failure-domain.beta.kubernetes.io/region',
  'beta.kubernetes.io/instance-type',
  'node.kubernetes.io/instance-type',
  'kubernetes.io/os',
  'kubernetes.io/arch',
  'beta.kubernetes.io/os',
  'beta.kubernetes.io/arch',
] as const;

/** Label prefixes (and their subdomains) a kubelet may use (kubeletLabelNamespaces). */
export const kubeletLabelNamespaces = ['kubelet.kubernetes.io', 'node.kubernetes.io'] as const;

const nodeRestrictionNamespace = 'node-restriction.kubernetes.io';

/** `namespace` is `domain` or a subdomain of it. */
const within = (namespace: string, domain: string) =>
  namespace === domain || namespace.endsWith(`.${domain}`);

/** Why a WindowsHost may not put label `key` on its Node, or undefined when it may. */
export function nodeLabelProblem(key: string): string | undefined {
  const slash = key.indexOf('/');
  const namespace = slash < 0 ? '' : key.slice(0, slash);
  if (within(namespace, nodeRestrictionNamespace)) {
    return `${key}: labels under ${nodeRestrictionNamespace}/ are for administrators to put on Nodes, and no kubelet may set them (NodeRestriction); label the Node yourself (kubectl label node) if this node should have it`;
  }
  const kubernetes = within(namespace, 'kubernetes.io') || within(namespace, 'k8s.io');
  if (!kubernetes) return undefined;
  if ((kubeletLabels as readonly string[]).includes(key)) return undefined;
  if (kubeletLabelNamespaces.some((allowed) => within(namespace, allowed))) return undefined;
  return `${key}: a label under kubernetes.io or k8s.io that a kubelet may not set on its own Node (NodeRestriction allows only ${kubeletLabels.join(', ')} and keys under ${kubeletLabelNamespaces.join(' or ')}); use a label of your own domain, or label the Node yourself (kubectl label node)`;
}

/** The labels of `labels` a WindowsHost may put on its Node, and why each other one may not. */
export function allowedNodeLabels(labels: Record<string, string> | undefined): {
  labels: Record<string, string>;
  refused: string[];
} {
  const allowed: Record<string, string> = {};
  const refused: string[] = [];
  for (const [key, value] of Object.entries(labels ?? {})) {
    const problem = nodeLabelProblem(key);
    if (problem) refused.push(problem);
    else allowed[key] = value;
  }
  return { labels: allowed, refused };
}

const escaped = (text: string) => text.replaceAll('.', '\\\\.');

/**
 * The CRD's CEL rules on a labels map (self): the same two refusals, each with its message.
 * Label keys have at most one "/" (the schema's key pattern), so the prefix is what precedes it.
 */
export const nodeLabelRules = [
  {
    rule: `self.all(k, !k.matches('^([^/]*\\\\.)?${escaped(nodeRestrictionNamespace)}/'))`,
    message: `keys under ${nodeRestrictionNamespace}/ are for administrators to put on Nodes; no kubelet may set them (NodeRestriction), so neither may a WindowsHost`,
  },
  {
    rule: `self.all(k, !k.matches('^([^/]*\\\\.)?(kubernetes|k8s)\\\\.io/') || k in [${kubeletLabels.map((l) => `'${l}'`).join(', ')}] || k.matches('^([^/]*\\\\.)?(${kubeletLabelNamespaces.map((n) => escaped(n.replace('.kubernetes.io', ''))).join('|')})\\\\.kubernetes\\\\.io/'))`,
    message: `keys under kubernetes.io or k8s.io must be ones a kubelet may set on its own Node (NodeRestriction): ${kubeletLabels.join(', ')}, or under ${kubeletLabelNamespaces.join(' or ')}`,
  },
];
