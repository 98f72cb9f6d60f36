/**
 * The API server's gitVersion ("v1.36.5"), asked of /version at most every 5 minutes: the
 * kubelet skew policy (src/rollout/kubelet-skew.ts) is checked against it before a payload
 * reaches any host, whether it joins or rolls through a pool.
 */
import * as k8s from '@kubernetes/client-node';

export function cachedApiServerVersion(
  kc: k8s.KubeConfig,
  maxAgeMs = 5 * 60_000,
): () => Promise<string> {
  let cached: { at: number; value: string } | undefined;
  return async () => {
    if (cached && Date.now() - cached.at < maxAgeMs) return cached.value;
    const info = await kc.makeApiClient(k8s.VersionApi).getCode();
    cached = { at: Date.now(), value: info.gitVersion };
    return info.gitVersion;
  };
}
