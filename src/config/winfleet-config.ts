/**
 * The operator's configuration: the `config.yaml` key of the ConfigMap `winfleet-config` in
 * the operator's namespace. Every field has a default, so an empty document is valid. The
 * document is checked against a JSON Schema; each error names the field and says what to
 * write instead, and an invalid document never replaces a valid one in a running operator.
 * The same parse compiles the registry routing (mirrors) the image resolver uses, so whatever
 * the resolver would refuse is refused here, naming the field, and never later; and it reads
 * the ConfigMap's second key, `ca-bundle.crt` (the CAs every node trusts), just as strictly.
 */

import { RE2JS } from 're2js';
import { parse } from 'yaml';
import type { ConfiguredNetworkMode } from '../api/network-mode.ts';
import { registryRoutingProblems } from '../images/registry-mirrors.ts';
import { parseIpv4Cidr } from '../net/ipv4-cidr.ts';
import { type ProxyConfig, proxyProblems } from '../net/proxy-settings.ts';
import { parseIdentityCertificates } from '../pki/instance-identity.ts';
import { caBundleKey, parseCaBundle, type TrustedCertificate } from '../pki/trusted-ca-bundle.ts';
import { compileSchema, invalidDocument, isDocumentError } from '../schema/validator.ts';
import { configuredWindowsDirProblem } from '../windows/windows-paths.ts';

/** A node taint / the toleration that matches it. */
export interface TaintConfig {
  key: string;
  value: string;
  effect: 'NoSchedule' | 'PreferNoSchedule' | 'NoExecute';
}

/** A mirror endpoint for a registry host (containerd hosts.toml style). */
export interface MirrorConfig {
  /** Base URL, e.g. "https://mirror.example.com" or "http://127.0.0.1:5000". */
  endpoint: string;
  /** Path prefix put before the repository on the mirror, e.g. "mcr". */
  pathPrefix?: string;
  /** Allow plain HTTP / skip TLS verification (loopback test registries only). */
  insecure?: boolean;
  /** PEM CA certificates this mirror's TLS certificate chains to (nodes: hosts.toml `ca`). */
  caBundle?: string;
}

export interface WinfleetConfig {
  placement: {
    /** The taint on Windows nodes; Windows pods get its toleration. */
    windowsTaint: TaintConfig;
    /** Rancher's mode: Linux nodes are tainted and Linux pods get this toleration. */
    linuxTaint: TaintConfig & { enabled: boolean };
  };
  webhook: {
    /** Namespaces the webhook never touches (the operator's own is always added). */
    excludedNamespaces: string[];
    /** Namespaces labelled `<key>=<value>` opt out (pods cannot opt themselves out). */
    optOutLabel: { key: string; value: string };
    /** What the API server does when validation cannot be reached. */
    validationFailurePolicy: 'Ignore' | 'Fail';
    timeoutSeconds: number;
  };
  images: {
    /** `enforce` rejects pods whose images no Ready Windows node can run; `warn` admits them with a warning. */
    compatibility: 'warn' | 'enforce';
    /** Treat a pod as Windows when every image resolves only to Windows manifests. */
    detectWindowsFromImages: boolean;
    /** Time budget for all registry lookups of one admission, in milliseconds. */
    lookupBudgetMs: number;
    /** Registry host → mirrors, tried in order. */
    mirrors: Record<string, MirrorConfig[]>;
    /** Try the registry itself when every mirror failed. */
    fallbackToUpstream: boolean;
    cacheTtlSeconds: number;
    cacheMaxEntries: number;
  };
  runtimeClasses: {
    enabled: boolean;
    handler: string;
    /** How long a class outlives the last node of its build before it is removed. */
    gracePeriodSeconds: number;
  };
  hosts: {
    /**
     * Namespaces besides the operator's own whose WindowsHosts it joins (default none). Read
     * at start-up: a change takes effect when the operator restarts.
     */
    namespaces: string[];
    /** Hosts configured at once. */
    concurrency: number;
    sshConnectTimeoutSeconds: number;
    /** Longest a single remote command (e.g. agent bootstrap) may take. */
    commandTimeoutSeconds: number;
    /** How long a new node may take to register and become Ready. */
    joinTimeoutSeconds: number;
    /**
     * Whether joining installs the Windows Containers feature on a host that lacks it (and
     * reboots the host to finish); false: such a host fails to join, saying so.
     */
    installContainersFeature: boolean;
    bootstrapTokenTtlMinutes: number;
    /** API server URL the hosts use; default: the operator's own. */
    apiServer?: string;
    clusterDNS: string;
    clusterDomain: string;
    serviceCIDR: string;
    podCIDR: string;
    /**
     * DNS suffixes under which a kubelet serving certificate may name the host (besides its
     * node name); none by default (src/fleet/serving-addresses.ts).
     */
    servingDnsSuffixes: string[];
    kubelet: {
      systemReserved: Record<string, string>;
      priorityClass: string;
      maxPods: number;
    };
    /** How often the agent re-checks its services. */
    agentCheckIntervalSeconds: number;
    /**
     * How long removal keeps trying to deconfigure an unreachable host before the host says
     * what to do (annotate winfleet.io/skip-deconfigure=true); it keeps trying after that.
     */
    removalTimeoutSeconds: number;
    /**
     * How long a removed Pull-mode host's node name is not issued again to a join
     * (join/retired-node-names.ts): its certificate may be valid that long. Default 365, as
     * kube-controller-manager's default --cluster-signing-duration; 0 turns it off.
     */
    retiredNodeNameDays: number;
    /** The proxy node services use (net/proxy-settings.ts); none by default. */
    proxy?: ProxyConfig;
    /** The agent's own health checks (src/node-health/detector.ts), for hosts bootstrapped after. */
    agentHealth: AgentHealthConfig;
    /**
     * What verifies the instance identity a pool may require of hosts joining by command
     * (spec.join.instanceIdentity, src/pki/instance-identity.ts).
     */
    instanceIdentity: {
      aws: {
        /** The AWS RSA public certificate of each Region instances run in (PEM); none by default. */
        certificates: string;
        /** When not empty: the only AWS accounts whose instances may join. */
        accountIds: string[];
      };
    };
  };
  /** The pod network Windows nodes join (src/network/). */
  network: NetworkConfig;
  /**
   * The CAs every node trusts (LocalMachine\Root): the ConfigMap's `ca-bundle.crt` key, not
   * config.yaml. Empty when the key is absent.
   */
  trustedCAs: TrustedCertificate[];
}

/**
 * `network`: how Windows nodes join the cluster's pod network. `mode` auto takes it from the
 * cluster (src/network/resolve-network.ts); a mode the cluster's network does not match is
 * refused, naming both.
 */
export interface NetworkConfig {
  mode: ConfiguredNetworkMode;
  flannel: {
    /**
     * The ConfigMap with Flannel's net-conf.json: `namespace` unset means kube-flannel, then
     * kube-system; a ConfigMap of that name anywhere else is never read.
     */
    configMap: { namespace?: string; name: string };
  };
  /** mode external: a CNI with its own Windows DaemonSet sets up the node's pod network. */
  external: {
    /** containerd's CNI conf_dir and bin_dir on the node (where the CNI installs). */
    cniConfDir: string;
    cniBinDir: string;
    /** winfleet's kube-proxy: auto (off when the CNI brings or replaces one), on, off. */
    kubeProxy: 'auto' | 'on' | 'off';
    /** The HNS network name (or RE2 regex) the CNI makes, e.g. "Calico", "antrea-hnsnetwork". */
    networkName?: string;
    /** The CNI's Windows DaemonSet, namespace/name, for a CNI winfleet does not recognise. */
    daemonSet?: string;
  };
}

/**
 * What the configuration may tune of each agent's health checks (hosts.agentHealth): a service
 * restarted more than `restartLoop.count` times within `windowSeconds` is in a restart loop
 * (FrequentServiceRestart) until it has run `stableSeconds` without a restart; a clock more
 * than `clockSkewSeconds` off the API server's is skewed (ClockSkew); an HNS endpoint without a
 * pod for `staleEndpointSeconds` is stale (StaleHNSEndpoints). The defaults are the detector's.
 */
export interface AgentHealthConfig {
  restartLoop: { count: number; windowSeconds: number; stableSeconds: number };
  clockSkewSeconds: number;
  /**
   * An HNS endpoint on winfleet's pod network whose address no pod on the node has is stale
   * once it stayed so this long, over two checks at least (StaleHNSEndpoints). Absent: the
   * agent's default (60 s, stale-endpoints.ts defaultStaleEndpointSeconds).
   */
  staleEndpointSeconds?: number;
}

/** hosts.agentHealth when not set: the agent's own defaults (src/node-health/detector.ts reads them). */
export const agentHealthDefaults: AgentHealthConfig = {
  restartLoop: { count: 5, windowSeconds: 600, stableSeconds: 60 },
  clockSkewSeconds: 60,
};

/**
 * hosts.agentHealth's schema, also what a bootstrap or join-info document may carry (there
 * without a default: absent stays absent, and the agent uses its own).
 */
export const agentHealthSchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    restartLoop: {
      type: 'object',
      additionalProperties: false,
      default: {},
      properties: {
        count: {
          type: 'integer',
          minimum: 1,
          maximum: 1000,
          default: agentHealthDefaults.restartLoop.count,
        },
        windowSeconds: {
          type: 'integer',
          minimum: 10,
          maximum: 86400,
          default: agentHealthDefaults.restartLoop.windowSeconds,
        },
        stableSeconds: {
          type: 'integer',
          minimum: 1,
          maximum: 86400,
          default: agentHealthDefaults.restartLoop.stableSeconds,
        },
      },
    },
    clockSkewSeconds: {
      type: 'integer',
      minimum: 1,
      maximum: 86400,
      default: agentHealthDefaults.clockSkewSeconds,
    },
    // No default: absent stays absent (the agent's own default, 60 s: stale-endpoints.ts), so a
    // document for an agent older than the field carries it only when it is tuned.
    staleEndpointSeconds: { type: 'integer', minimum: 1, maximum: 86400 },
  },
} as const;

const taint = {
  type: 'object',
  additionalProperties: false,
  required: ['key', 'effect'],
  properties: {
    key: { type: 'string', minLength: 1, maxLength: 316 },
    value: { type: 'string', maxLength: 63 },
    effect: { enum: ['NoSchedule', 'PreferNoSchedule', 'NoExecute'] },
  },
} as const;

const dnsLabel = '^[a-z0-9]([-a-z0-9]*[a-z0-9])?$';

/** network's schema (NetworkConfig). */
const networkSchema = {
  type: 'object',
  additionalProperties: false,
  default: {},
  properties: {
    mode: {
      enum: ['auto', 'flannel-vxlan', 'flannel-host-gw', 'external', 'ovn-hybrid', 'routed'],
      default: 'auto',
    },
    flannel: {
      type: 'object',
      additionalProperties: false,
      default: {},
      properties: {
        configMap: {
          type: 'object',
          additionalProperties: false,
          default: {},
          properties: {
            namespace: { type: 'string', pattern: dnsLabel, maxLength: 63 },
            name: {
              type: 'string',
              pattern: '^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$',
              maxLength: 253,
              default: 'kube-flannel-cfg',
            },
          },
        },
      },
    },
    external: {
      type: 'object',
      additionalProperties: false,
      default: {},
      properties: {
        // Checked (with the fix) by configuredWindowsDirProblem.
        cniConfDir: { type: 'string', default: 'C:\\etc\\cni\\net.d' },
        cniBinDir: { type: 'string', default: 'C:\\opt\\cni\\bin' },
        kubeProxy: { enum: ['auto', 'on', 'off'], default: 'auto' },
        // Compiled as RE2 by semanticProblems.
        networkName: { type: 'string', minLength: 1, maxLength: 256 },
        daemonSet: {
          type: 'string',
          pattern: '^[a-z0-9]([-a-z0-9]*[a-z0-9])?/[a-z0-9]([-a-z0-9.]*[a-z0-9])?$',
          maxLength: 317,
        },
      },
    },
  },
} as const;

/** JSON Schema of config.yaml; defaults are filled in by the validator. */
export const configSchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    placement: {
      type: 'object',
      additionalProperties: false,
      default: {},
      properties: {
        windowsTaint: { ...taint, default: { key: 'os', value: 'windows', effect: 'NoSchedule' } },
        linuxTaint: {
          ...taint,
          required: [],
          properties: { ...taint.properties, enabled: { type: 'boolean', default: false } },
          default: { enabled: false, key: 'cattle.io/os', value: 'linux', effect: 'NoSchedule' },
        },
      },
    },
    webhook: {
      type: 'object',
      additionalProperties: false,
      default: {},
      properties: {
        excludedNamespaces: { type: 'array', items: { type: 'string' }, default: ['kube-system'] },
        optOutLabel: {
          type: 'object',
          additionalProperties: false,
          required: ['key', 'value'],
          properties: { key: { type: 'string', minLength: 1 }, value: { type: 'string' } },
          default: { key: 'winfleet.io/webhook', value: 'disabled' },
        },
        validationFailurePolicy: { enum: ['Ignore', 'Fail'], default: 'Ignore' },
        timeoutSeconds: { type: 'integer', minimum: 1, maximum: 5, default: 5 },
      },
    },
    images: {
      type: 'object',
      additionalProperties: false,
      default: {},
      properties: {
        compatibility: { enum: ['warn', 'enforce'], default: 'warn' },
        detectWindowsFromImages: { type: 'boolean', default: false },
        lookupBudgetMs: { type: 'integer', minimum: 100, maximum: 4000, default: 2000 },
        mirrors: {
          type: 'object',
          default: {},
          additionalProperties: {
            type: 'array',
            minItems: 1,
            items: {
              type: 'object',
              additionalProperties: false,
              required: ['endpoint'],
              properties: {
                // Checked (and quoted with credentials redacted) by the routing compile.
                endpoint: { type: 'string', minLength: 1 },
                pathPrefix: { type: 'string' },
                insecure: { type: 'boolean' },
                caBundle: { type: 'string', minLength: 1 },
              },
            },
          },
        },
        fallbackToUpstream: { type: 'boolean', default: true },
        cacheTtlSeconds: { type: 'integer', minimum: 0, default: 600 },
        cacheMaxEntries: { type: 'integer', minimum: 1, default: 2000 },
      },
    },
    runtimeClasses: {
      type: 'object',
      additionalProperties: false,
      default: {},
      properties: {
        enabled: { type: 'boolean', default: true },
        handler: {
          type: 'string',
          pattern: '^[a-z0-9]([-a-z0-9]*[a-z0-9])?$',
          default: 'runhcs-wcow-process',
        },
        gracePeriodSeconds: { type: 'integer', minimum: 0, default: 300 },
      },
    },
    hosts: {
      type: 'object',
      additionalProperties: false,
      default: {},
      properties: {
        namespaces: {
          type: 'array',
          items: {
            type: 'string',
            pattern: '^[a-z0-9]([-a-z0-9]*[a-z0-9])?$',
            maxLength: 63,
          },
          uniqueItems: true,
          default: [],
        },
        concurrency: { type: 'integer', minimum: 1, maximum: 200, default: 10 },
        sshConnectTimeoutSeconds: { type: 'integer', minimum: 1, maximum: 300, default: 15 },
        commandTimeoutSeconds: { type: 'integer', minimum: 5, maximum: 3600, default: 600 },
        joinTimeoutSeconds: { type: 'integer', minimum: 10, maximum: 7200, default: 900 },
        installContainersFeature: { type: 'boolean', default: true },
        bootstrapTokenTtlMinutes: { type: 'integer', minimum: 10, maximum: 1440, default: 60 },
        apiServer: { type: 'string', pattern: '^https://[^/\\s]+/?$' },
        clusterDNS: {
          type: 'string',
          pattern: '^([0-9]{1,3}\\.){3}[0-9]{1,3}$',
          default: '10.96.0.10',
        },
        clusterDomain: { type: 'string', default: 'cluster.local' },
        serviceCIDR: {
          type: 'string',
          pattern: '^([0-9]{1,3}\\.){3}[0-9]{1,3}/[0-9]{1,2}$',
          default: '10.96.0.0/12',
        },
        podCIDR: {
          type: 'string',
          pattern: '^([0-9]{1,3}\\.){3}[0-9]{1,3}/[0-9]{1,2}$',
          default: '10.244.0.0/16',
        },
        servingDnsSuffixes: {
          type: 'array',
          description:
            'DNS suffixes (e.g. win.corp.example) under which a kubelet serving certificate may name its host besides the node name; empty: the node name only',
          items: {
            type: 'string',
            maxLength: 253,
            pattern: '^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$',
          },
          uniqueItems: true,
          default: [],
        },
        kubelet: {
          type: 'object',
          additionalProperties: false,
          default: {},
          properties: {
            systemReserved: {
              type: 'object',
              additionalProperties: { type: 'string', pattern: '^[0-9.]+[A-Za-z]*$' },
              default: { cpu: '500m', memory: '2Gi', 'ephemeral-storage': '1Gi' },
            },
            priorityClass: {
              enum: [
                'ABOVE_NORMAL_PRIORITY_CLASS',
                'NORMAL_PRIORITY_CLASS',
                'HIGH_PRIORITY_CLASS',
                'BELOW_NORMAL_PRIORITY_CLASS',
              ],
              default: 'ABOVE_NORMAL_PRIORITY_CLASS',
            },
            maxPods: { type: 'integer', minimum: 1, maximum: 1000, default: 110 },
          },
        },
        agentCheckIntervalSeconds: { type: 'number', minimum: 0.2, maximum: 3600, default: 120 },
        removalTimeoutSeconds: { type: 'integer', minimum: 1, maximum: 86400, default: 300 },
        retiredNodeNameDays: { type: 'integer', minimum: 0, maximum: 3650, default: 365 },
        agentHealth: { ...agentHealthSchema, default: {} },
        instanceIdentity: {
          type: 'object',
          additionalProperties: false,
          default: {},
          properties: {
            aws: {
              type: 'object',
              additionalProperties: false,
              default: {},
              properties: {
                certificates: { type: 'string', maxLength: 65536, default: '' },
                accountIds: {
                  type: 'array',
                  items: { type: 'string', pattern: '^[0-9]{12}$' },
                  uniqueItems: true,
                  default: [],
                },
              },
            },
          },
        },
        proxy: {
          type: 'object',
          additionalProperties: false,
          properties: {
            // Checked (and quoted with credentials redacted) by proxyProblems.
            httpProxy: { type: 'string', minLength: 1 },
            httpsProxy: { type: 'string', minLength: 1 },
            noProxy: {
              anyOf: [{ type: 'string' }, { type: 'array', items: { type: 'string' } }],
            },
          },
        },
      },
    },
    network: networkSchema,
  },
} as const;

const validateConfig = compileSchema<Omit<WinfleetConfig, 'trustedCAs'>>(configSchema, {
  code: 'WF_CONFIG_INVALID',
  document: 'config.yaml',
});

/**
 * Parses and validates config.yaml text, filling defaults, with the ConfigMap's CA bundle
 * (`ca-bundle.crt`, parsed strictly: trusted-ca-bundle.ts) when it has one. Problems of both
 * come in one report, each naming its field.
 */
export function parseConfig(
  text: string,
  source = 'config.yaml',
  caBundle?: string,
): WinfleetConfig {
  let document: unknown;
  try {
    document = parse(text) ?? {};
  } catch (error) {
    throw invalidDocument('WF_CONFIG_INVALID', source, [
      `(top level): not valid YAML: ${(error as Error).message.split('\n')[0]}; fix the YAML syntax`,
    ]);
  }
  if (typeof document !== 'object' || Array.isArray(document)) {
    throw invalidDocument('WF_CONFIG_INVALID', source, [
      '(top level): must be a mapping of sections (placement, webhook, images, runtimeClasses, hosts, network)',
    ]);
  }
  let problems: string[] = [];
  let config: Omit<WinfleetConfig, 'trustedCAs'> | undefined;
  try {
    config = validateConfig(document, source);
  } catch (error) {
    if (!isDocumentError(error, 'WF_CONFIG_INVALID')) throw error;
    problems = [...error.details.problems];
  }
  problems.push(...semanticProblems(config ?? (document as Partial<WinfleetConfig>)));
  const bundle = caBundle === undefined ? undefined : parseCaBundle(caBundle, caBundleKey);
  problems.push(...(bundle?.problems ?? []));
  if (problems.length > 0) throw invalidDocument('WF_CONFIG_INVALID', source, problems);
  return { ...config!, trustedCAs: bundle?.certificates ?? [] };
}

/**
 * What the schema cannot say: the mirror routing compiles and the cluster CIDRs are real
 * CIDRs. Runs on the raw document too when the schema failed, so one report lists everything.
 */
function semanticProblems(config: Partial<WinfleetConfig>): string[] {
  const problems: string[] = [];
  const images = config.images as Partial<WinfleetConfig['images']> | undefined;
  const mirrors = images?.mirrors;
  if (mirrors && typeof mirrors === 'object' && !Array.isArray(mirrors)) {
    try {
      problems.push(...registryRoutingProblems({ mirrors }, 'images.'));
    } catch {
      // A shape the schema already reports.
    }
  }
  const hosts = config.hosts as Partial<WinfleetConfig['hosts']> | undefined;
  const proxy = hosts?.proxy;
  if (proxy && typeof proxy === 'object' && !Array.isArray(proxy)) {
    problems.push(...proxyProblems(proxy, 'hosts.proxy'));
  }
  if (mirrors && typeof mirrors === 'object' && !Array.isArray(mirrors)) {
    for (const [host, list] of Object.entries(mirrors)) {
      if (!Array.isArray(list)) continue;
      list.forEach((mirror, i) => {
        const pem = (mirror as MirrorConfig | undefined)?.caBundle;
        if (typeof pem !== 'string') return;
        const field = `images.mirrors["${host}"][${i}].caBundle`;
        problems.push(...parseCaBundle(pem, field).problems);
      });
    }
  }
  const external = (config.network as Partial<NetworkConfig> | undefined)?.external as
    | Partial<NetworkConfig['external']>
    | undefined;
  for (const field of ['cniConfDir', 'cniBinDir'] as const) {
    const dir = external?.[field];
    if (typeof dir !== 'string') continue;
    const problem = configuredWindowsDirProblem(dir, `network.external.${field}`);
    if (problem) problems.push(problem);
  }
  const networkName = external?.networkName;
  if (typeof networkName === 'string' && networkName !== '') {
    try {
      RE2JS.compile(networkName);
    } catch (error) {
      problems.push(
        `network.external.networkName: "${networkName}" is neither a name nor an RE2 regex (${(error as Error).message}); write the HNS network's name, e.g. "Calico"`,
      );
    }
  }
  const awsCertificates = (hosts?.instanceIdentity as WinfleetConfig['hosts']['instanceIdentity'])
    ?.aws?.certificates;
  if (typeof awsCertificates === 'string' && awsCertificates.trim() !== '') {
    problems.push(
      ...parseIdentityCertificates(awsCertificates, 'hosts.instanceIdentity.aws.certificates')
        .problems,
    );
  }
  for (const field of ['serviceCIDR', 'podCIDR'] as const) {
    const cidr = hosts?.[field];
    if (typeof cidr !== 'string') continue;
    if (parseIpv4Cidr(cidr) === undefined) {
      problems.push(`hosts.${field}: "${cidr}" is not an IPv4 CIDR; write e.g. "10.96.0.0/12"`);
    }
  }
  return problems;
}

/** The configuration with every default. */
export function defaultConfig(): WinfleetConfig {
  return parseConfig('');
}
