/**
 * The Kubernetes version-skew policy for the kubelet (kubernetes.io/releases/version-skew-policy,
 * as of 1.28): a kubelet must not be newer than kube-apiserver and may be up to three minor
 * versions older. The policy is stated in minor versions, so a kubelet 1.36.6 with an API
 * server 1.36.5 is within it. A payload whose kubelet is outside is refused before any host is
 * touched. In a cluster whose API servers differ (mid-upgrade), pass the oldest.
 *
 * Versions are read strictly as Kubernetes' gitVersion: "v" major.minor.patch, then an optional
 * pre-release ("-rc.1", "-eks-1552ad0") and build ("+k3s1"), semver syntax, no leading zeros.
 * payload.json's kubernetesVersion ("v1.36.5") is the kubelet's version; the payload's own
 * version ("v1.36.5-wf.1") is not a Kubernetes version.
 */
import { WinfleetError } from '../errors/catalog.ts';

export interface KubeVersion {
  major: number;
  minor: number;
  patch: number;
  /** The text as given, for messages. */
  text: string;
}

const number = '(0|[1-9][0-9]{0,8})';
const identifiers = '[0-9A-Za-z-]+(?:\\.[0-9A-Za-z-]+)*';
const gitVersion = new RegExp(
  `^v${number}\\.${number}\\.${number}(?:-${identifiers})?(?:\\+${identifiers})?$`,
);

/** Oldest kubelet minor, below the API server's, the policy allows. */
export const kubeletMaxMinorsOlder = 3;

/**
 * Parses a Kubernetes version ("v1.36.5", "v1.30.2-eks-1552ad0", "v1.29.4+k3s1"). Throws a
 * RangeError naming `field` for anything else.
 */
export function parseKubeVersion(value: unknown, field: string): KubeVersion {
  const match = typeof value === 'string' ? gitVersion.exec(value) : null;
  if (!match) {
    throw new WinfleetError(
      'WF_SCHEMA_INVALID',
      `Cannot parse ${field} ${JSON.stringify(value) ?? String(value)}: expected a Kubernetes version such as "v1.36.5"`,
    );
  }
  return {
    major: Number(match[1]),
    minor: Number(match[2]),
    patch: Number(match[3]),
    text: value as string,
  };
}

export type SkewVerdict = { ok: true } | { ok: false; message: string };

/**
 * Whether a kubelet of version `kubelet` may join a cluster whose API server is `apiServer`.
 * The refusal names the payload field, both versions, the rule and the payloads that would do.
 *
 * @example checkKubeletSkew('v1.32.0', 'v1.36.5') // { ok: false, message: '… more than 3 minor versions older …' }
 */
export function checkKubeletSkew(
  kubelet: string,
  apiServer: string,
  field = 'payload.json kubernetesVersion',
): SkewVerdict {
  const k = parseKubeVersion(kubelet, field);
  const a = parseKubeVersion(apiServer, 'the API server version');
  const oldest = Math.max(0, a.minor - kubeletMaxMinorsOlder);
  const allowed = `use a payload for v${a.major}.${oldest} to v${a.major}.${a.minor}`;
  if (k.major !== a.major) {
    return {
      ok: false,
      message: `${field} is ${k.text} but the API server is ${a.text}: the kubelet's major version must be the API server's; ${allowed}`,
    };
  }
  if (k.minor > a.minor) {
    return {
      ok: false,
      message: `${field} is ${k.text}, newer than the API server ${a.text}: a kubelet may not be newer than kube-apiserver; ${allowed}, or upgrade the control plane first`,
    };
  }
  if (a.minor - k.minor > kubeletMaxMinorsOlder) {
    return {
      ok: false,
      message: `${field} is ${k.text}, more than ${kubeletMaxMinorsOlder} minor versions older than the API server ${a.text}; ${allowed}`,
    };
  }
  return { ok: true };
}
