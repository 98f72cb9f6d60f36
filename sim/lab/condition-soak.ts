/**
 * What a lab soak checks on every Windows Node while it watches (issue 32, "Done when"):
 * `KubeProxyUnhealthy` never True, and `KubeletCertificateExpiring` False with a message that
 * gives the client certificate's expiry. Observations come from polling: a condition that went
 * True and back between two looks still shows, as a lastTransitionTime that moved while the
 * status stayed False.
 */
import type * as k8s from '@kubernetes/client-node';

export interface SoakFinding {
  node: string;
  type: string;
  /** What was wrong: the status seen, a flip between two looks, or a missing condition. */
  what: string;
  at: string;
}

type Condition = Pick<k8s.V1NodeCondition, 'type' | 'status' | 'reason' | 'message'> & {
  lastTransitionTime?: Date | string;
};

/** The agent's message for a valid client certificate (src/node-health/detector.ts). */
const certificateValid =
  /^The kubelet's client certificate is valid until \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/;

const time = (t: Date | string | undefined) =>
  t === undefined ? undefined : new Date(t).getTime();

export class ConditionSoak {
  readonly #findings: SoakFinding[] = [];
  /** Per node and condition type, the status and lastTransitionTime of the last look. */
  readonly #seen = new Map<string, { status: string; since: number | undefined }>();
  /** Per node, its conditions at the last look. */
  readonly #last = new Map<string, Condition[]>();

  /** One look at the Nodes; Windows Nodes only. */
  observe(nodes: readonly k8s.V1Node[], now: Date): void {
    for (const node of nodes) {
      if (node.metadata?.labels?.['kubernetes.io/os'] !== 'windows') continue;
      const name = node.metadata.name!;
      const conditions = (node.status?.conditions ?? []) as Condition[];
      this.#last.set(name, conditions);
      for (const type of ['KubeProxyUnhealthy', 'KubeletCertificateExpiring']) {
        const c = conditions.find((x) => x.type === type);
        if (!c) continue;
        const key = `${name}/${type}`;
        const before = this.#seen.get(key);
        // False at both looks, but it changed since: it was something else in between.
        const moved = before?.status === 'False' && before.since !== time(c.lastTransitionTime);
        this.#seen.set(key, { status: c.status, since: time(c.lastTransitionTime) });
        if (c.status === 'True') {
          this.#add(name, type, `True (${c.reason}: ${c.message})`, now);
        } else if (moved && c.status === 'False') {
          this.#add(name, type, `went True and back between two looks (${c.message})`, now);
        }
      }
    }
  }

  #add(node: string, type: string, what: string, now: Date): void {
    const last = this.#findings.findLast((f) => f.node === node && f.type === type);
    if (last?.what === what) return;
    this.#findings.push({ node, type, what, at: now.toISOString() });
  }

  /** The findings so far, and at the end what each Node's last look must show. */
  findings(now: Date): SoakFinding[] {
    const end: SoakFinding[] = [];
    for (const [node, conditions] of this.#last) {
      const cert = conditions.find((x) => x.type === 'KubeletCertificateExpiring');
      if (cert?.status !== 'False' || !certificateValid.test(cert.message ?? '')) {
        end.push({
          node,
          type: 'KubeletCertificateExpiring',
          what: cert
            ? `${cert.status} at the end, message "${cert.message}" (want False, "…valid until <time>")`
            : 'missing at the end',
          at: now.toISOString(),
        });
      }
    }
    return [...this.#findings, ...end];
  }

  /** One line per Windows Node: its two conditions at the last look. */
  summary(): string[] {
    return [...this.#last].map(([node, conditions]) => {
      const show = (type: string) => {
        const c = conditions.find((x) => x.type === type);
        return c ? `${type}=${c.status} "${c.message}"` : `${type} missing`;
      };
      return `${node}: ${show('KubeProxyUnhealthy')}; ${show('KubeletCertificateExpiring')}`;
    });
  }

  get nodes(): number {
    return this.#last.size;
  }
}
