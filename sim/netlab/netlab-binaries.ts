/**
 * Where the real Linux networking binaries are (flanneld; the bridge, host-local and loopback
 * CNI plugins; CoreDNS). hack/build-netlab.sh builds them from the Go module proxy into a cache keyed by
 * go.sum; `make test` passes that directory as WINFLEET_NETLAB_BIN, and a test run alone builds
 * them on demand (with progress on stderr), as sim/cluster/binaries.ts does for the control plane.
 */
import { builtBinaries } from '../cluster/binaries.ts';

export const netlabBinaries = ['flanneld', 'bridge', 'host-local', 'loopback', 'coredns'] as const;
export const netlabBinEnv = 'WINFLEET_NETLAB_BIN';

/** The directory holding the binaries, building whatever is missing. */
export const ensureNetlabBinaries = builtBinaries({
  env: netlabBinEnv,
  script: 'build-netlab.sh',
  names: netlabBinaries,
});
