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
                    description: 'IPv4 address or DNS name of the host',
                    pattern:
                      '^(([0-9]{1,3}\\.){3}[0-9]{1,3}|[a-zA-Z0-9]([-a-zA-Z0-9]{0,61}[a-zA-Z0-9])?(\\.[a-zA-Z0-9]([-a-zA-Z0-9]{0,61}[a-zA-Z0-9])?)*)$',
                  },
                  port: { type: 'integer', minimum: 1, maximum: 65535, default: 22 },
                  username: {
                    type: 'string',
                    minLength: 1,
                    maxLength: 104,
                    description: 'An administrator account on the host',
                  },
                  sshKeySecretRef: {
                    type: 'object',
                    required: ['name'],
                    properties: {
                      name: { type: 'string', minLength: 1, maxLength: 253 },
                      key: { type: 'string', default: 'ssh-privatekey' },
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
                    additionalProperties: { type: 'string', maxLength: 63 },
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
                    'x-kubernetes-list-type': 'map',
                    'x-kubernetes-list-map-keys': ['type'],
                  },
                  nodeName: { type: 'string' },
                  windowsBuild: { type: 'string' },
                  windowsVersion: { type: 'string' },
                  addresses: { type: 'array', items: { type: 'string' } },
                  hostname: { type: 'string' },
                  hostKeyFingerprint: { type: 'string' },
                  servicesVersion: { type: 'string' },
                  bootstrapTokenId: { type: 'string' },
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
