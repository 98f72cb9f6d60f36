/**
 * The CustomResourceDefinitions winfleet installs, with full OpenAPI schemas (so the API
 * server rejects a bad spec with the field named) and kubectl printer columns.
 */
import type * as k8s from '@kubernetes/client-node';
import { apiGroup } from './windows-host.ts';

const condition = {
  type: 'object',
  required: ['type', 'status', 'reason', 'message', 'lastTransitionTime'],
  properties: {
    type: { type: 'string' },
    status: { type: 'string', enum: ['True', 'False', 'Unknown'] },
    reason: { type: 'string' },
    message: { type: 'string' },
    lastTransitionTime: { type: 'string', format: 'date-time' },
    observedGeneration: { type: 'integer', format: 'int64', minimum: 0 },
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
              apiVersion: { type: 'string' },
              kind: { type: 'string' },
              metadata: { type: 'object' },
              spec: {
                type: 'object',
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
                      'The Secret, in the operator namespace, holding the SSH private key',
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
                    items: {
                      type: 'object',
                      required: ['key', 'effect'],
                      properties: {
                        key: labelKey,
                        value: { type: 'string', maxLength: 63 },
                        effect: {
                          type: 'string',
                          enum: ['NoSchedule', 'PreferNoSchedule', 'NoExecute'],
                        },
                      },
                    },
                  },
                  pool: {
                    type: 'string',
                    maxLength: 63,
                    pattern: '^[a-z0-9]([-a-z0-9]*[a-z0-9])?$',
                  },
                },
              },
              status: {
                type: 'object',
                properties: {
                  observedGeneration: { type: 'integer', format: 'int64' },
                  conditions: {
                    type: 'array',
                    items: condition,
                    // The client serialises the typed model: its property names, not the
                    // wire names ("x-kubernetes-list-type" would be dropped silently).
                    x_kubernetes_list_type: 'map',
                    x_kubernetes_list_map_keys: ['type'],
                  },
                  nodeName: { type: 'string' },
                  windowsBuild: { type: 'string' },
                  windowsVersion: { type: 'string' },
                  addresses: { type: 'array', items: { type: 'string' } },
                  hostname: { type: 'string' },
                  servingAddresses: { type: 'array', items: { type: 'string' } },
                  hostKeyFingerprint: { type: 'string' },
                  servicesVersion: { type: 'string' },
                  bootstrapTokenId: { type: 'string' },
                  bootstrappedAt: { type: 'string', format: 'date-time' },
                  servicesRequestedAt: { type: 'string', format: 'date-time' },
                  lastError: {
                    type: 'object',
                    properties: {
                      step: { type: 'string' },
                      message: { type: 'string' },
                      time: { type: 'string', format: 'date-time' },
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
