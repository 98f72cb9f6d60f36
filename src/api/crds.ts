/**
 * The CustomResourceDefinitions winfleet installs, with full OpenAPI schemas (so the API
 * server rejects a bad spec with the field named) and kubectl printer columns.
 */
import type * as k8s from '@kubernetes/client-node';
import { apiGroup } from './windows-host.ts';

const condition = {
  type: 'object',
  description: 'One aspect of the host’s state, as Kubernetes conditions are',
  required: ['type', 'status', 'reason', 'message', 'lastTransitionTime'],
  properties: {
    type: {
      type: 'string',
      description: 'Reachable, Bootstrapped, NodeRegistered, Ready or Degraded',
    },
    status: {
      type: 'string',
      enum: ['True', 'False', 'Unknown'],
      description: 'True, False or Unknown',
    },
    reason: {
      type: 'string',
      description: 'Why, in one CamelCase word (README: Troubleshooting says what to do)',
    },
    message: { type: 'string', description: 'What happened, for a person' },
    lastTransitionTime: {
      type: 'string',
      format: 'date-time',
      description: 'When status last changed',
    },
    observedGeneration: {
      type: 'integer',
      format: 'int64',
      minimum: 0,
      description: 'The metadata.generation the condition was written for',
    },
  },
};

const ipv4Octet = '(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])';
const ipv4 = `(${ipv4Octet}\\.){3}${ipv4Octet}`;
const dnsLabel = '[a-zA-Z0-9]([-a-zA-Z0-9]{0,61}[a-zA-Z0-9])?';
// The last label of a host name is not all digits ("999.1.1.1" is a bad address, not a name).
const lastDnsLabel =
  '([a-zA-Z]|[a-zA-Z][-a-zA-Z0-9]{0,61}[a-zA-Z0-9]|[a-zA-Z0-9][-a-zA-Z0-9]{0,61}[a-zA-Z])';
const dnsSubdomain = '^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$';

const labelKey = {
  type: 'string',
  maxLength: 317,
  pattern:
    '^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$',
};

export const windowsHostCrd: k8s.V1CustomResourceDefinition = {
  apiVersion: 'apiextensions.k8s.io/v1',
  kind: 'CustomResourceDefinition',
  metadata: {
    name: `windowshosts.${apiGroup}`,
    labels: { 'app.kubernetes.io/managed-by': 'winfleet' },
  },
  spec: {
    group: apiGroup,
    scope: 'Namespaced',
    names: {
      plural: 'windowshosts',
      singular: 'windowshost',
      kind: 'WindowsHost',
      shortNames: ['wh'],
      categories: ['winfleet'],
    },
    versions: [
      {
        name: 'v1alpha1',
        served: true,
        storage: true,
        subresources: { status: {} },
        additionalPrinterColumns: [
          { name: 'Address', type: 'string', jsonPath: '.spec.address' },
          { name: 'Node', type: 'string', jsonPath: '.status.nodeName' },
          { name: 'Build', type: 'string', jsonPath: '.status.windowsVersion' },
          {
            name: 'Ready',
            type: 'string',
            jsonPath: ".status.conditions[?(@.type=='Ready')].status",
          },
          // Why it is (not) Ready: the failure reason, or the join phase (README: Troubleshooting).
          {
            name: 'Reason',
            type: 'string',
            jsonPath: ".status.conditions[?(@.type=='Ready')].reason",
          },
          { name: 'Version', type: 'string', jsonPath: '.status.servicesVersion' },
          { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' },
        ],
        schema: {
          openAPIV3Schema: {
            type: 'object',
            description:
              'A Windows machine joined to the cluster as a node over SSH (bring your own host).',
            required: ['spec'],
            properties: {
              apiVersion: {
                type: 'string',
                description: 'The versioned schema of this object: winfleet.io/v1alpha1',
              },
              kind: { type: 'string', description: 'WindowsHost' },
              // The API server forbids anything but name/generateName here, a description too.
              metadata: { type: 'object' },
              spec: {
                type: 'object',
                description:
                  'How to reach the host and what its node should look like; winfleet joins it over SSH',
                required: ['address', 'username', 'sshKeySecretRef'],
                properties: {
                  address: {
                    type: 'string',
                    minLength: 1,
                    maxLength: 253,
                    // Octets above 255, leading zeros and all-numeric names are refused: the
                    // operator would look such an address up in DNS instead of connecting.
                    description:
                      'IPv4 address (e.g. 10.1.42.7) or DNS name of the host; a DNS name ends in a label that starts or ends with a letter',
                    pattern: `^(${ipv4}|(${dnsLabel}\\.)*${lastDnsLabel})$`,
                  },
                  port: {
                    type: 'integer',
                    minimum: 1,
                    maximum: 65535,
                    default: 22,
                    description: 'SSH port of the host, 1 to 65535 (default 22)',
                  },
                  username: {
                    type: 'string',
                    minLength: 1,
                    maxLength: 104,
                    // A control character (a newline) in a user name is never a Windows account.
                    pattern: '^[^\\x00-\\x1f\\x7f]+$',
                    description:
                      'An administrator account on the host (no control characters, at most 104 characters)',
                  },
                  sshKeySecretRef: {
                    type: 'object',
                    required: ['name'],
                    description:
                      "The Secret, in the WindowsHost's namespace, holding the SSH private key for spec.username",
                    properties: {
                      name: {
                        type: 'string',
                        minLength: 1,
                        maxLength: 253,
                        pattern: dnsSubdomain,
                        description: 'Name of the Secret (a DNS subdomain, as Secret names are)',
                      },
                      key: {
                        type: 'string',
                        default: 'ssh-privatekey',
                        minLength: 1,
                        maxLength: 253,
                        pattern: '^[-._a-zA-Z0-9]+$',
                        description:
                          'Key of the private key in the Secret (letters, digits, "-", "_" and "."; default ssh-privatekey)',
                      },
                    },
                  },
                  nodeName: {
                    type: 'string',
                    maxLength: 63,
                    pattern: '^[a-z0-9]([-a-z0-9]*[a-z0-9])?$',
                    description:
                      'Node name (RFC 1123 label); defaults to the host name, lower-cased',
                  },
                  labels: {
                    type: 'object',
                    maxProperties: 64,
                    description:
                      'Labels added to the node: Kubernetes label keys and values (at most 63 characters, alphanumeric at both ends)',
                    additionalProperties: {
                      type: 'string',
                      maxLength: 63,
                      pattern: '^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$',
                    },
                    // Map keys have no schema of their own; a bad key would fail the Node update.
                    x_kubernetes_validations: [
                      {
                        rule: `self.all(k, size(k) <= 317 && k.matches(r'${labelKey.pattern}'))`,
                        message: 'every key must be a Kubernetes label key ([prefix/]name)',
                      },
                    ],
                  },
                  taints: {
                    type: 'array',
                    description:
                      'Taints registered on the node, besides the Windows taint winfleet adds (placement.windowsTaint)',
                    items: {
                      type: 'object',
                      description: 'A node taint',
                      required: ['key', 'effect'],
                      properties: {
                        key: { ...labelKey, description: 'Taint key ([prefix/]name)' },
                        value: {
                          type: 'string',
                          maxLength: 63,
                          description: 'Taint value (at most 63 characters)',
                        },
                        effect: {
                          type: 'string',
                          enum: ['NoSchedule', 'PreferNoSchedule', 'NoExecute'],
                          description: 'NoSchedule, PreferNoSchedule or NoExecute',
                        },
                      },
                    },
                  },
                  pool: {
                    type: 'string',
                    maxLength: 63,
                    pattern: '^[a-z0-9]([-a-z0-9]*[a-z0-9])?$',
                    description: 'Name of the pool the host belongs to (an RFC 1123 label)',
                  },
                },
              },
              status: {
                type: 'object',
                description: 'What winfleet found and did; written by the operator only',
                properties: {
                  observedGeneration: {
                    type: 'integer',
                    format: 'int64',
                    description: 'The metadata.generation the operator last acted on',
                  },
                  conditions: {
                    type: 'array',
                    description: 'Reachable, Bootstrapped, NodeRegistered, Ready and Degraded',
                    items: condition,
                    // The client serialises the typed model: its property names, not the
                    // wire names ("x-kubernetes-list-type" would be dropped silently).
                    x_kubernetes_list_type: 'map',
                    x_kubernetes_list_map_keys: ['type'],
                  },
                  nodeName: { type: 'string', description: 'Name of the host’s Node' },
                  windowsBuild: {
                    type: 'string',
                    description: 'Windows build as the node label carries it, e.g. 10.0.20348',
                  },
                  windowsVersion: {
                    type: 'string',
                    description: 'Full Windows version read from the host, e.g. 10.0.20348.2582',
                  },
                  addresses: {
                    type: 'array',
                    description:
                      'Addresses the host reported at its last bootstrap (node IP first)',
                    items: { type: 'string' },
                  },
                  hostname: { type: 'string', description: 'The host’s own host name' },
                  servingAddresses: {
                    type: 'array',
                    description:
                      'IPs and DNS names the kubelet serving certificate may carry; pinned at the first join, changed only with the winfleet.io/allow-serving-addresses annotation',
                    items: { type: 'string' },
                  },
                  hostKeyFingerprint: {
                    type: 'string',
                    description:
                      'SHA256 fingerprint of the SSH host key, pinned on first contact (accept a new one with winfleet.io/trust-host-key)',
                  },
                  servicesVersion: {
                    type: 'string',
                    description:
                      'The services version (kubelet, kube-proxy, …) applied to the node',
                  },
                  bootstrapTokenId: {
                    type: 'string',
                    description:
                      'Id of the bootstrap token in use while the node joins (never the secret)',
                  },
                  bootstrappedAt: {
                    type: 'string',
                    format: 'date-time',
                    description: 'When the agent bootstrap last succeeded on the host',
                  },
                  servicesRequestedAt: {
                    type: 'string',
                    format: 'date-time',
                    description:
                      'Since when the node’s agent has been expected to apply the services version',
                  },
                  lastError: {
                    type: 'object',
                    description: 'The last failure of a join or removal step',
                    properties: {
                      step: {
                        type: 'string',
                        description: 'The step that failed (connect, copy-payload, …)',
                      },
                      message: { type: 'string', description: 'What failed and what to do' },
                      time: { type: 'string', format: 'date-time', description: 'When' },
                    },
                  },
                },
              },
            },
          },
        },
      },
    ],
  },
} as unknown as k8s.V1CustomResourceDefinition;

export const winfleetCrds = [windowsHostCrd];
