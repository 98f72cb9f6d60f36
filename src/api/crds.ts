/**
 * The CustomResourceDefinitions winfleet installs, with full OpenAPI schemas (so the API
 * server rejects a bad spec with the field named) and kubectl printer columns.
 */

import * as k8s from '@kubernetes/client-node';
import { domainNameMaxLength, organizationalUnitMaxLength } from './active-directory.ts';
import { apiGroup } from './group-version.ts';
import { nodeLabelRules } from './node-labels.ts';
import { prePullDefaults, prePullLimits } from './pre-pull.ts';
import { lastActionsLimit, RemediationRung, RungResult } from './remediation-status.ts';
import { hostKeyFingerprintPattern, hostModes } from './windows-host.ts';
import {
  agentConditionTypes,
  conditionStatuses,
  healthDefaults,
  instanceIdentityKinds,
  migrationPhases,
  nodeNamePatternMaxLength,
  patchPolicies,
  poolDefaults,
  weekdays,
} from './windows-node-pool.ts';

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
      description: 'Why, in one CamelCase word (docs/troubleshooting.md says what to do)',
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

const rolloutSteps = ['Cordon', 'Drain', 'Apply', 'Reboot', 'WaitReady', 'Uncordon'];
const time = (description: string) => ({ type: 'string', format: 'date-time', description });

const hostRolloutStatusWire = {
  type: 'object',
  description:
    'The host’s part in its pool’s rollout, recorded before each action so a restarted operator resumes it',
  properties: {
    current: {
      type: 'object',
      description: 'The change under way; absent when none is',
      required: ['target', 'changes', 'step', 'startedAt', 'stepStartedAt'],
      properties: {
        target: {
          type: 'object',
          description: 'What the change brings',
          required: ['patchPolicy'],
          properties: {
            servicesVersion: {
              type: 'string',
              description: 'The services version to run; absent leaves the services as they are',
            },
            patchPolicy: {
              type: 'string',
              enum: [...patchPolicies],
              description: 'Windows updates to install: None, Security or All',
            },
            rebootRequestedAt: time('The reboot request the change serves, if any'),
            repairRequestedAt: time('The repair reboot remediation asked for, if any'),
            retire: {
              type: 'boolean',
              description:
                'The pool is replaced (spec.replaces of another pool): the host is drained and left cordoned, nothing else',
            },
          },
        },
        changes: {
          type: 'array',
          description: 'What was pending when the change started',
          items: {
            type: 'string',
            enum: ['services', 'patches', 'reboot-requested', 'reboot-pending', 'repair', 'retire'],
          },
        },
        step: {
          type: 'string',
          enum: rolloutSteps,
          description: 'Cordon, Drain, Apply, Reboot, WaitReady or Uncordon',
        },
        startedAt: time('When the change started'),
        stepStartedAt: time('When the change entered its step; the step’s timeout counts from it'),
        reboot: {
          type: 'object',
          description: 'The change’s one reboot, recorded before the agent was asked for it',
          required: ['token', 'bootIdBefore', 'requestedAt'],
          properties: {
            token: {
              type: 'string',
              description: 'The request the agent reboots for, at most once',
            },
            bootIdBefore: {
              type: 'string',
              description:
                'The Node’s boot id before the reboot; the reboot is done once it differs',
            },
            requestedAt: time('When the reboot was asked for'),
          },
        },
        failure: {
          type: 'object',
          description:
            'The step stopped at its timeout; it goes on when the host gets there or with winfleet.io/retry-rollout',
          properties: {
            step: { type: 'string', enum: rolloutSteps, description: 'The step that stopped' },
            reason: {
              type: 'string',
              description: 'DrainTimedOut, ApplyTimedOut, RebootTimedOut or ReadyTimedOut',
            },
            message: { type: 'string', description: 'What happened and what to do' },
            since: time('When it stopped'),
          },
        },
      },
    },
    lastRebootAt: time(
      'When winfleet last rebooted the host for a change: reboot requests up to this time are served',
    ),
    retryHandled: {
      type: 'string',
      description:
        'The winfleet.io/retry-rollout value last acted on (so it acts once per value); cleared when the annotation is gone',
    },
    cordoned: {
      type: 'string',
      maxLength: 253,
      description:
        'The Node the rollout cordoned: winfleet uncordons a Node only when this names it (and it carries winfleet.io/cordoned-by=winfleet), never a cordon someone else set',
    },
    retired: {
      type: 'object',
      description:
        'The host was retired: its pool is replaced by another (spec.replaces), so it was drained and left cordoned for removal; uncordoned and cleared if the migration stops',
      required: ['at'],
      properties: {
        at: time('When its drain finished'),
        node: { type: 'string', maxLength: 253, description: 'The Node left cordoned' },
      },
    },
    lastChange: {
      type: 'object',
      description:
        'The host’s last change that ended: the least recently changed hosts of a pool start first',
      required: ['endedAt'],
      properties: {
        endedAt: time('When it ended (finished, or ended by setting the host aside)'),
        servedRebootPending: {
          type: 'boolean',
          description:
            'It was made for a reboot Windows wanted and rebooted the host: the same claim right after it sets the host aside',
        },
      },
    },
    setAside: {
      type: 'object',
      description:
        'The host is set aside: the rollout goes on without it and starts no change on it until winfleet.io/retry-rollout is set to a new value',
      required: ['cause', 'message', 'since'],
      properties: {
        cause: {
          type: 'string',
          enum: ['ChangeFailed', 'RebootPendingPersists'],
          description:
            'ChangeFailed: its change stopped at a step; RebootPendingPersists: Windows still reported a reboot pending after the reboot winfleet made for it',
        },
        message: { type: 'string', description: 'What happened and how to clear it' },
        since: time('When it was set aside'),
        bootId: {
          type: 'string',
          description:
            'ChangeFailed: the Node’s boot id then; Ready in another boot, the host is no longer set aside',
        },
      },
    },
  },
};

const remediationRungs = Object.values(RemediationRung);

const hostRemediationStatusWire = {
  type: 'object',
  description:
    'The host’s remediation ladder (RestartService, Rebootstrap, Reboot, then RemediationFailed), recorded before each action so a restarted operator resumes it, and the last rungs’ results',
  properties: {
    current: {
      type: 'object',
      description: 'The ladder under way; absent when the host is healthy',
      required: ['problem', 'startedAt', 'rung', 'rungStartedAt'],
      properties: {
        problem: {
          type: 'object',
          description: 'What made the host unhealthy when the ladder started',
          required: ['type', 'status', 'since'],
          properties: {
            type: {
              type: 'string',
              maxLength: 316,
              description:
                'The Node condition type, or NodeStartup for a Node that never reported Ready',
            },
            status: { type: 'string', maxLength: 16, description: 'The condition’s status' },
            since: time('Since when it held'),
          },
        },
        startedAt: time('When the ladder started'),
        rung: {
          type: 'string',
          enum: remediationRungs,
          description: 'RestartService, Rebootstrap or Reboot',
        },
        rungStartedAt: time('When the rung started; its timeout counts from it'),
        rebootstrap: {
          type: 'object',
          description: 'The re-bootstrap over SSH asked for, recorded before it runs (once)',
          required: ['requestedAt'],
          properties: {
            requestedAt: time('It is done once status.bootstrappedAt is at or after this time'),
          },
        },
        reboot: {
          type: 'object',
          description:
            'The repair reboot asked of the pool’s rollout (inside maxUnavailable), recorded before it is asked',
          required: ['requestedAt'],
          properties: {
            requestedAt: time(
              'It is done once status.rollout.lastRebootAt is at or after this time',
            ),
            doneAt: time('When winfleet saw the reboot done; rebootTimeout counts from it'),
          },
        },
        held: {
          type: 'object',
          description: 'No rung moves on while held; the rung’s clock restarts when it ends',
          required: ['reason', 'since'],
          properties: {
            reason: {
              type: 'string',
              enum: ['TooManyUnhealthy', 'SkipAnnotation', 'Disabled', 'InvalidSpec', 'InRollout'],
              description:
                'TooManyUnhealthy (the pool’s maxUnhealthy), SkipAnnotation (winfleet.io/skip-remediation), Disabled, InvalidSpec, or InRollout (a change of the pool’s own)',
            },
            since: time('Since when'),
          },
        },
      },
    },
    failed: {
      type: 'object',
      description:
        'RemediationFailed: every rung ran and the host is still unhealthy; the node stays cordoned until the host is healthy',
      required: ['since', 'message'],
      properties: {
        since: time('When the ladder ended'),
        message: { type: 'string', maxLength: 4096, description: 'What is wrong and what to do' },
      },
    },
    cordoned: {
      type: 'boolean',
      description:
        'Remediation cordoned the host’s Node: it uncordons it only while this is true (and the Node carries winfleet.io/cordoned-by=remediation), never a cordon someone else set',
    },
    lastActions: {
      type: 'array',
      maxItems: lastActionsLimit,
      description: `The last rungs’ results, newest last (at most ${lastActionsLimit})`,
      'x-kubernetes-list-type': 'atomic',
      items: {
        type: 'object',
        description: 'A rung that ended',
        required: ['time', 'rung', 'result'],
        properties: {
          time: time('When it ended'),
          rung: {
            type: 'string',
            enum: remediationRungs,
            description: 'RestartService, Rebootstrap or Reboot',
          },
          result: {
            type: 'string',
            enum: Object.values(RungResult),
            description:
              'Succeeded (the host was healthy again), TimedOut (still unhealthy at the rung’s timeout), Failed (its action failed) or Skipped (the host cannot take the rung: Rebootstrap needs SSH, which a Pull-mode host has not)',
          },
          message: { type: 'string', maxLength: 4096, description: 'What happened' },
        },
      },
    },
  },
};

export const windowsHostCrd = fromWire({
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
          { name: 'Mode', type: 'string', jsonPath: '.spec.mode', priority: 1 },
          { name: 'Build', type: 'string', jsonPath: '.status.windowsVersion' },
          {
            name: 'Ready',
            type: 'string',
            jsonPath: ".status.conditions[?(@.type=='Ready')].status",
          },
          // Why it is (not) Ready: the failure reason, or the join phase (docs/troubleshooting.md).
          {
            name: 'Reason',
            type: 'string',
            jsonPath: ".status.conditions[?(@.type=='Ready')].reason",
          },
          { name: 'Version', type: 'string', jsonPath: '.status.servicesVersion' },
          { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' },
          // Images before pods: how the host's pulls stand (kubectl get -o wide).
          { name: 'PrePull', type: 'string', jsonPath: '.status.prePull.reason', priority: 1 },
        ],
        schema: {
          openAPIV3Schema: {
            type: 'object',
            description:
              'A Windows machine joined to the cluster as a node: over SSH (bring your own host), or by itself with a join command (mode Pull).',
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
                  'How to reach the host and what its node should look like; in SSH mode winfleet joins it over SSH, in Pull mode the host joined by itself',
                // Schema `required` cannot depend on another field: CEL says what each mode needs.
                'x-kubernetes-validations': [
                  {
                    rule: "self.mode == 'Pull' || (has(self.address) && has(self.username) && has(self.sshKeySecretRef))",
                    message:
                      'SSH mode needs spec.address, spec.username and spec.sshKeySecretRef (winfleet connects to the host with them)',
                  },
                  {
                    rule: "self.mode != 'Pull' || !has(self.sshKeySecretRef)",
                    message:
                      'Pull mode takes no spec.sshKeySecretRef: winfleet never connects to a host that joined by itself',
                  },
                  {
                    rule: "self.mode != 'Pull' || !has(self.hostKey)",
                    message:
                      'Pull mode takes no spec.hostKey: winfleet never connects to a host that joined by itself',
                  },
                  {
                    rule: "self.mode != 'Pull' || has(self.nodeName)",
                    message: 'Pull mode needs spec.nodeName: the node name the host joined with',
                  },
                ],
                properties: {
                  mode: {
                    type: 'string',
                    enum: [...hostModes],
                    default: 'SSH',
                    description:
                      'SSH (default): winfleet joins and runs the host over SSH. Pull: the host joined by itself with a join command and its agent pulls what it runs; winfleet creates such hosts when it approves their node certificate. Cannot change',
                    'x-kubernetes-validations': [
                      {
                        rule: 'self == oldSelf',
                        message:
                          'spec.mode cannot change; delete the WindowsHost and join it again',
                      },
                    ],
                  },
                  address: {
                    type: 'string',
                    minLength: 1,
                    maxLength: 253,
                    // Octets above 255, leading zeros and all-numeric names are refused: the
                    // operator would look such an address up in DNS instead of connecting.
                    description:
                      'IPv4 address (e.g. 10.1.42.7) or DNS name of the host; a DNS name ends in a label that starts or ends with a letter. Required in SSH mode',
                    pattern: `^(${ipv4}|(${dnsLabel}\\.)*${lastDnsLabel})$`,
                  },
                  port: {
                    type: 'integer',
                    minimum: 1,
                    maximum: 65535,
                    default: 22,
                    description: 'SSH port of the host, 1 to 65535 (default 22)',
                  },
                  hostKey: {
                    type: 'string',
                    // What ssh-keygen -lf prints: SHA256: and 43 characters of unpadded base64.
                    pattern: hostKeyFingerprintPattern,
                    description:
                      'The SSH host key an admin pinned before first contact, as ssh-keygen -lf prints its fingerprint (SHA256: and 43 base64 characters); winfleet hosts add --host-key or --host-key-from-file sets it. When set, winfleet connects only to a host presenting this key; without it the first key seen is pinned (trust on first use) and such a host never receives Active Directory credentials. SSH mode only',
                  },
                  username: {
                    type: 'string',
                    minLength: 1,
                    maxLength: 104,
                    // A control character (a newline) in a user name is never a Windows account.
                    pattern: '^[^\\x00-\\x1f\\x7f]+$',
                    description:
                      'An administrator account on the host (no control characters, at most 104 characters). Required in SSH mode',
                  },
                  sshKeySecretRef: {
                    type: 'object',
                    required: ['name'],
                    description:
                      "The Secret, in the WindowsHost's namespace, holding the SSH private key for spec.username. Required in SSH mode, refused in Pull mode",
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
                      'Labels added to the node: Kubernetes label keys and values (at most 63 characters, alphanumeric at both ends); only keys a kubelet may set on its own Node under NodeRestriction (no node-restriction.kubernetes.io/, no kubernetes.io or k8s.io keys but the kubelet’s own and those under kubelet.kubernetes.io or node.kubernetes.io)',
                    additionalProperties: {
                      type: 'string',
                      maxLength: 63,
                      pattern: '^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$',
                    },
                    // Map keys have no schema of their own; a bad key would fail the Node update.
                    // The operator labels a Pull host's Node with its own credentials, so the
                    // keys NodeRestriction keeps from kubelets are refused here (node-labels.ts).
                    'x-kubernetes-validations': [
                      {
                        rule: `self.all(k, size(k) <= 317 && k.matches(r'${labelKey.pattern}'))`,
                        message: 'every key must be a Kubernetes label key ([prefix/]name)',
                      },
                      ...nodeLabelRules,
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
                    'x-kubernetes-list-type': 'map',
                    'x-kubernetes-list-map-keys': ['type'],
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
                      'SHA256 fingerprint of the SSH host key the operator connects to: spec.hostKey when an admin pinned it, else the key seen on first contact (accept a new one with winfleet.io/trust-host-key)',
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
                  rollout: hostRolloutStatusWire,
                  remediation: hostRemediationStatusWire,
                  windowsUpdates: {
                    type: 'object',
                    description:
                      'What the host’s agent last reported of Windows Update (winfleet.io/windows-updates on its Node), in the current boot',
                    properties: {
                      searchedAt: {
                        type: 'string',
                        format: 'date-time',
                        description: 'When the agent last searched Windows Update',
                      },
                      available: {
                        type: 'array',
                        maxItems: 200,
                        description:
                          'Updates found and not installed: "KB5040437 (Security Updates)"',
                        // A KB and up to 8 categories of 64 characters (the report's own limits).
                        items: { type: 'string', maxLength: 600 },
                      },
                      installed: {
                        type: 'array',
                        maxItems: 50,
                        description: 'KBs winfleet installed on the host, newest last',
                        items: { type: 'string', maxLength: 16 },
                      },
                      failed: {
                        type: 'array',
                        maxItems: 200,
                        description: 'The last install’s failures: "KB… : error"',
                        items: { type: 'string', maxLength: 600 },
                      },
                      rebootPending: {
                        type: 'boolean',
                        description:
                          'Windows reports a reboot pending (any of the three registry keys)',
                      },
                      error: {
                        type: 'string',
                        maxLength: 512,
                        description: 'The last search’s error',
                      },
                    },
                  },
                  prePull: {
                    type: 'object',
                    description:
                      'Images before pods: the ImagesPrePulled condition of the host’s Node as its agent last reported it (absent without one)',
                    required: ['status', 'reason', 'message'],
                    properties: {
                      status: {
                        type: 'string',
                        enum: ['True', 'False'],
                        description: 'True once every listed image is there',
                      },
                      reason: {
                        type: 'string',
                        maxLength: 64,
                        description:
                          'PrePulling, PrePulled, PrePullFailed, PrePullNoSpace or PrePullTimedOut (docs/troubleshooting.md)',
                      },
                      message: {
                        type: 'string',
                        maxLength: 1024,
                        description:
                          'The agent’s message, ending with the boot and services version the run was for',
                      },
                      imagesDone: {
                        type: 'integer',
                        minimum: 0,
                        description: 'Images there, pulled or failed, when the message counts them',
                      },
                      imagesTotal: {
                        type: 'integer',
                        minimum: 0,
                        description: 'Images listed, when the message counts them',
                      },
                      lastTransitionTime: {
                        type: 'string',
                        format: 'date-time',
                        description: 'When the agent last reported it',
                      },
                    },
                  },
                  activeDirectoryRestartAt: {
                    type: 'string',
                    format: 'date-time',
                    description:
                      'When winfleet last restarted the host to finish a rename or domain join (spec.activeDirectory of its pool)',
                  },
                  containersFeatureRestartAt: {
                    type: 'string',
                    format: 'date-time',
                    description:
                      'When winfleet restarted the host to finish a pending Containers feature install or uninstall; a feature still pending after that restart is reported, not restarted again',
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
});

const labelValue = {
  type: 'string',
  maxLength: 63,
  pattern: '^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$',
};

const poolCondition = {
  ...condition,
  description: 'One aspect of the pool’s state, as Kubernetes conditions are',
  properties: {
    ...condition.properties,
    type: { type: 'string', description: 'Available, Progressing or Degraded' },
  },
};

// Go duration text, each unit once and largest first ("10m", "1h30m", "10m0s"); the CEL rule
// bounds it (src/rollout/duration.ts reads the same).
const durationPattern =
  '^((0|[1-9][0-9]*)h)?((0|[1-9][0-9]*)m)?((0|[1-9][0-9]*)s)?((0|[1-9][0-9]*)ms)?$';
const timeout = (defaultValue: string, description: string) => ({
  type: 'string',
  default: defaultValue,
  minLength: 2,
  maxLength: 32,
  pattern: durationPattern,
  description,
  'x-kubernetes-validations': [
    {
      rule: "duration(self) >= duration('1s') && duration(self) <= duration('24h')",
      message: 'must be from 1s to 24h, e.g. 10m or 1h30m',
    },
  ],
});

const healthSpecWire = {
  type: 'object',
  default: {},
  description:
    'When a host counts as unhealthy and how winfleet repairs it: RestartService (the agent), Rebootstrap (over SSH), Reboot (through this pool’s rollout, inside maxUnavailable), then RemediationFailed (left cordoned). winfleet never deletes a Node or a WindowsHost. Hosts in no pool get the defaults',
  properties: {
    unhealthyConditions: {
      type: 'array',
      minItems: 1,
      maxItems: 32,
      default: healthDefaults.unhealthyConditions,
      description: `Any one of these Node conditions, held for its timeout (from its lastTransitionTime), makes the host unhealthy. Default: Ready False or Unknown 5m; ${agentConditionTypes.join(', ')} True (the agent’s)`,
      'x-kubernetes-list-type': 'map',
      'x-kubernetes-list-map-keys': ['type', 'status'],
      items: {
        type: 'object',
        description: 'A Node condition type and status, and how long it may hold',
        required: ['type', 'status', 'timeout'],
        properties: {
          type: {
            type: 'string',
            maxLength: 316,
            pattern: labelKey.pattern,
            description: 'The Node condition type, e.g. Ready or KubeletUnhealthy',
          },
          status: {
            type: 'string',
            enum: [...conditionStatuses],
            description: 'True, False or Unknown (quote them in YAML)',
          },
          timeout: {
            type: 'string',
            minLength: 2,
            maxLength: 32,
            pattern: durationPattern,
            description: 'How long it may hold before the host is unhealthy: 0s to 24h, e.g. 5m',
            'x-kubernetes-validations': [
              {
                rule: "duration(self) <= duration('24h')",
                message: 'must be from 0s to 24h, e.g. 5m',
              },
            ],
          },
        },
      },
    },
    nodeStartupTimeout: {
      ...timeout(
        healthDefaults.nodeStartupTimeout,
        'How long after its bootstrap a host’s Node may take to report Ready at all before the host is unhealthy: 30s to 24h. Default 15m',
      ),
      'x-kubernetes-validations': [
        {
          rule: "duration(self) >= duration('30s') && duration(self) <= duration('24h')",
          message: 'must be from 30s to 24h, e.g. 15m',
        },
      ],
    },
    maxUnhealthy: {
      'x-kubernetes-int-or-string': true,
      anyOf: [{ type: 'integer' }, { type: 'string' }],
      default: healthDefaults.maxUnhealthy,
      description:
        'Above this many unhealthy hosts no host is repaired and the pool is Degraded (TooManyUnhealthy): a mass failure is usually the network or the control plane. A whole number ≥ 0 or a percentage of the pool’s hosts, rounded down and at least 1 (unless 0%). Default 40%',
      'x-kubernetes-validations': [
        {
          rule: "type(self) == int ? self >= 0 && self <= 100000 : self.matches('^(100|[1-9]?[0-9])%$')",
          message: 'must be a whole number ≥ 0 or a percentage from 0% to 100%, e.g. 40%',
        },
      ],
    },
    remediation: {
      type: 'object',
      default: {},
      description: 'The remediation ladder: on or off, and each rung’s timeout',
      properties: {
        enabled: {
          type: 'boolean',
          default: healthDefaults.remediationEnabled,
          description:
            'False: unhealthy hosts are reported (conditions, Events, metrics) and never repaired. Default true',
        },
        restartServiceTimeout: timeout(
          healthDefaults.restartServiceTimeout,
          'How long the agent’s own repair (restarting the failing service) may take: 1s to 24h. Default 5m',
        ),
        rebootstrapTimeout: timeout(
          healthDefaults.rebootstrapTimeout,
          'How long a re-bootstrap over SSH and the host’s recovery after it may take: 1s to 24h. Default 15m',
        ),
        rebootTimeout: timeout(
          healthDefaults.rebootTimeout,
          'How long after its repair reboot the host may take to be healthy: 1s to 24h. Default 15m',
        ),
      },
    },
  },
};

const windowsNodePoolWire = {
  apiVersion: 'apiextensions.k8s.io/v1',
  kind: 'CustomResourceDefinition',
  metadata: {
    name: `windowsnodepools.${apiGroup}`,
    labels: { 'app.kubernetes.io/managed-by': 'winfleet' },
  },
  spec: {
    group: apiGroup,
    scope: 'Namespaced',
    names: {
      plural: 'windowsnodepools',
      singular: 'windowsnodepool',
      kind: 'WindowsNodePool',
      shortNames: ['wnp'],
      categories: ['winfleet'],
    },
    versions: [
      {
        name: 'v1alpha1',
        served: true,
        storage: true,
        subresources: { status: {} },
        additionalPrinterColumns: [
          { name: 'Hosts', type: 'integer', jsonPath: '.status.hosts' },
          { name: 'Ready', type: 'integer', jsonPath: '.status.readyHosts' },
          { name: 'Updated', type: 'integer', jsonPath: '.status.updatedHosts' },
          { name: 'Unavailable', type: 'integer', jsonPath: '.status.unavailableHosts' },
          {
            name: 'Available',
            type: 'string',
            jsonPath: ".status.conditions[?(@.type=='Available')].status",
          },
          // What the rollout is doing: RollingOut, RolloutComplete, WaitingForWindow, Paused, …
          {
            name: 'Progressing',
            type: 'string',
            jsonPath: ".status.conditions[?(@.type=='Progressing')].reason",
          },
          {
            name: 'Degraded',
            type: 'string',
            jsonPath: ".status.conditions[?(@.type=='Degraded')].status",
          },
          { name: 'Paused', type: 'boolean', jsonPath: '.spec.paused' },
          { name: 'Policy', type: 'string', jsonPath: '.spec.patches.policy' },
          { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' },
          {
            name: 'Max Unavailable',
            type: 'string',
            jsonPath: '.spec.maxUnavailable',
            priority: 1,
          },
          {
            name: 'Reason',
            type: 'string',
            jsonPath: ".status.conditions[?(@.type=='Degraded')].reason",
            priority: 1,
          },
          // spec.replaces: MigrationWaiting, MigrationInProgress, MigrationBlocked, …
          {
            name: 'Migration',
            type: 'string',
            jsonPath: ".status.conditions[?(@.type=='Migrated')].reason",
            priority: 1,
          },
        ],
        schema: {
          openAPIV3Schema: {
            type: 'object',
            description:
              'A set of WindowsHosts through which every disruptive change (payload upgrade, Windows patches, reboot) rolls with at most maxUnavailable hosts down at once.',
            required: ['spec'],
            properties: {
              apiVersion: {
                type: 'string',
                description: 'The versioned schema of this object: winfleet.io/v1alpha1',
              },
              kind: { type: 'string', description: 'WindowsNodePool' },
              metadata: { type: 'object' },
              spec: {
                type: 'object',
                description:
                  'Which hosts belong to the pool and how changes roll through them; hosts no pool selects roll one at a time',
                required: ['selector'],
                properties: {
                  selector: {
                    type: 'object',
                    description:
                      'Which WindowsHosts of the pool’s namespace belong to it, by their labels: every matchLabels pair and matchExpressions requirement must hold; {} selects all. A host two pools select gets no change and both pools are Degraded',
                    'x-kubernetes-map-type': 'atomic',
                    properties: {
                      matchLabels: {
                        type: 'object',
                        maxProperties: 64,
                        description: 'Labels a WindowsHost must carry, with these values',
                        additionalProperties: labelValue,
                        'x-kubernetes-validations': [
                          {
                            rule: `self.all(k, size(k) <= 317 && k.matches(r'${labelKey.pattern}'))`,
                            message: 'every key must be a Kubernetes label key ([prefix/]name)',
                          },
                        ],
                      },
                      matchExpressions: {
                        type: 'array',
                        maxItems: 32,
                        description: 'Requirements on WindowsHost labels, as in a Deployment',
                        'x-kubernetes-list-type': 'atomic',
                        items: {
                          type: 'object',
                          description: 'A label requirement',
                          required: ['key', 'operator'],
                          properties: {
                            key: { ...labelKey, description: 'The label key ([prefix/]name)' },
                            operator: {
                              type: 'string',
                              enum: ['In', 'NotIn', 'Exists', 'DoesNotExist'],
                              description: 'In, NotIn, Exists or DoesNotExist',
                            },
                            values: {
                              type: 'array',
                              maxItems: 64,
                              description:
                                'Label values: at least one for In and NotIn, none for Exists and DoesNotExist',
                              'x-kubernetes-list-type': 'atomic',
                              items: labelValue,
                            },
                          },
                          'x-kubernetes-validations': [
                            {
                              rule: "self.operator in ['In', 'NotIn'] ? has(self.values) && size(self.values) > 0 : !has(self.values) || size(self.values) == 0",
                              message:
                                'In and NotIn need at least one value; Exists and DoesNotExist take none',
                            },
                          ],
                        },
                      },
                    },
                  },
                  maxUnavailable: {
                    'x-kubernetes-int-or-string': true,
                    anyOf: [{ type: 'integer' }, { type: 'string' }],
                    default: poolDefaults.maxUnavailable,
                    description:
                      'How many hosts may be unavailable at once, hosts already NotReady included: a whole number ≥ 1, or a percentage of the pool’s hosts ("25%", rounded down, at least 1). Default 1',
                    'x-kubernetes-validations': [
                      {
                        rule: "type(self) == int ? self >= 1 && self <= 100000 : self.matches('^(100|[1-9][0-9]?)%$')",
                        message:
                          'must be a whole number ≥ 1 or a percentage from 1% to 100% (0 would never let a host change; set paused: true to hold changes)',
                      },
                    ],
                  },
                  drainTimeout: timeout(
                    poolDefaults.drainTimeout,
                    'How long draining a host may take (evictions honour PodDisruptionBudgets and are never forced) before its change stops and the pool is Degraded: 1s to 24h, e.g. 10m or 1h30m. Default 10m',
                  ),
                  readyTimeout: timeout(
                    poolDefaults.readyTimeout,
                    'How long each of applying the change, rebooting and becoming Ready on the new version may take before the host’s change stops and the pool is Degraded: 1s to 24h. Default 15m',
                  ),
                  maintenanceWindow: {
                    type: 'object',
                    description:
                      'When changes may start (hosts in a change finish it after the window closes); absent: at any time. A window whose end is not after its start runs past midnight and belongs to its start day',
                    required: ['start', 'end'],
                    properties: {
                      days: {
                        type: 'array',
                        minItems: 1,
                        maxItems: 7,
                        description: 'Days the window opens on (Mon … Sun); default every day',
                        'x-kubernetes-list-type': 'set',
                        items: { type: 'string', enum: [...weekdays] },
                      },
                      start: {
                        type: 'string',
                        pattern: '^([01][0-9]|2[0-3]):[0-5][0-9]$',
                        description: 'When it opens: HH:MM, 24-hour, in timeZone',
                      },
                      end: {
                        type: 'string',
                        pattern: '^(([01][0-9]|2[0-3]):[0-5][0-9]|24:00)$',
                        description: 'When it closes: HH:MM, or 24:00 for the end of the day',
                      },
                      timeZone: {
                        type: 'string',
                        default: poolDefaults.timeZone,
                        maxLength: 64,
                        pattern: '^[A-Z][A-Za-z0-9_+-]*(/[A-Z][A-Za-z0-9_+-]*)*$',
                        description: 'IANA time zone name, e.g. Europe/Berlin; default UTC',
                      },
                    },
                    'x-kubernetes-validations': [
                      {
                        rule: 'self.start != self.end',
                        message:
                          'start and end must differ (for a whole day use start 00:00 and end 24:00)',
                      },
                    ],
                  },
                  patches: {
                    type: 'object',
                    default: {},
                    description: 'Windows updates the pool installs, in its window and budget',
                    properties: {
                      policy: {
                        type: 'string',
                        enum: [...patchPolicies],
                        default: poolDefaults.patchPolicy,
                        description:
                          'None, Security (Security and Critical updates) or All. Default None',
                      },
                    },
                  },
                  rebootRequestedAt: {
                    type: 'string',
                    format: 'date-time',
                    nullable: true,
                    description:
                      'Set or change it to a time (RFC 3339): every host winfleet has not rebooted since then reboots once, rolling; a future time schedules it',
                  },
                  replaces: {
                    type: 'string',
                    minLength: 1,
                    maxLength: 253,
                    pattern: dnsSubdomain,
                    description:
                      'The name of a WindowsNodePool in the same namespace that this pool replaces (a migration to this pool’s Windows build): once every host of this pool is Ready, the old pool’s hosts are cordoned and drained through the old pool’s rollout (its maxUnavailable, PodDisruptionBudgets respected) and left cordoned for removal. It stops, naming them in status.migration, while a workload on the old pool has no image for this pool’s build. Absent: no migration',
                  },
                  paused: {
                    type: 'boolean',
                    default: false,
                    description:
                      'True: no change starts; hosts in a change finish it. Default false',
                  },
                  health: healthSpecWire,
                  join: {
                    type: 'object',
                    description:
                      'How hosts join the pool by themselves (winfleet join-command): which node names they may take',
                    properties: {
                      nodeNamePattern: {
                        type: 'string',
                        minLength: 2,
                        maxLength: nodeNamePatternMaxLength,
                        description: `A regular expression (RE2 syntax, as Go and Kubernetes read it) the node name of a host joining the pool must match, anchored: it starts with ^ and ends with $, e.g. ^web-[0-9]{1,4}$. At most ${nodeNamePatternMaxLength} characters. RE2 matches in linear time, so no pattern can make the check slow. Required for hosts joining by command: without it winfleet join-command refuses the pool and its tokens' CSRs are denied`,
                        'x-kubernetes-validations': [
                          {
                            rule: "self.startsWith('^') && self.endsWith('$')",
                            message:
                              'must be anchored: start with ^ and end with $ (e.g. ^web-[0-9]+$), so that it decides the whole node name',
                          },
                          {
                            // The API server compiles the pattern with Go's RE2, the syntax the
                            // operator's RE2 port reads; one that does not compile fails here.
                            rule: "''.matches(self) || !''.matches(self)",
                            message: 'must be a valid RE2 regular expression',
                          },
                        ],
                      },
                      instanceIdentity: {
                        type: 'string',
                        enum: [...instanceIdentityKinds],
                        description:
                          'AWS: a host joining by command must present its EC2 instance identity document, signed by AWS (verified with hosts.instanceIdentity.aws.certificates of winfleet-config), and is named for its instance id; a token then admits only real instances, each once. Absent: no instance identity is asked for',
                      },
                    },
                  },
                  prePull: {
                    type: 'object',
                    'x-kubernetes-validations': [
                      {
                        rule: 'has(self.images) || (has(self.auto) && self.auto)',
                        message:
                          'spec.prePull: list images, or set spec.prePull.auto: true, or remove spec.prePull',
                      },
                    ],
                    description:
                      'Images the pool’s hosts pull through containerd after a join, an upgrade or a reboot, before they take pods: the node keeps the taint winfleet.io/pre-pulling:NoSchedule until its agent reports the Node condition ImagesPrePulled (True, or False with PrePullFailed, PrePullNoSpace or PrePullTimedOut: a failure never keeps the node from pods). Absent: nothing is pulled ahead',
                    properties: {
                      images: {
                        type: 'array',
                        minItems: 1,
                        maxItems: prePullLimits.maxImages,
                        'x-kubernetes-list-type': 'set',
                        description:
                          'Image references (registry/repository:tag or @sha256:digest), each pulled for the host’s own Windows build; a registry given as an IP address the image address policy refuses is refused',
                        items: { type: 'string', minLength: 1, maxLength: 512 },
                      },
                      auto: {
                        type: 'boolean',
                        default: false,
                        description:
                          'True: after the images listed, each host also pulls the images the running pods on the cluster’s Windows nodes use, most used first (at most 32 in all), keeping only those with a variant the host’s Windows build runs and that the image address policy allows; recomputed only for a new node or after a reboot or an upgrade, never on a running node. images or auto (or both) is required. Default false',
                      },
                      timeoutSeconds: {
                        type: 'integer',
                        minimum: prePullLimits.minTimeoutSeconds,
                        maximum: prePullLimits.maxTimeoutSeconds,
                        default: prePullDefaults.timeoutSeconds,
                        description:
                          'How long a node waits for its pulls before it takes pods anyway (PrePullTimedOut). Default 900',
                      },
                      maxParallel: {
                        type: 'integer',
                        minimum: 1,
                        maximum: prePullLimits.maxParallel,
                        default: prePullDefaults.maxParallel,
                        description: 'How many images a host pulls at once. Default 2',
                      },
                    },
                  },
                  isolation: {
                    type: 'object',
                    description:
                      'How the pool’s hosts may isolate containers besides process isolation',
                    properties: {
                      hyperV: {
                        type: 'boolean',
                        description:
                          'True: the pool’s hosts get containerd’s Hyper-V handler (runhcs-wcow-hypervisor) and the Node label winfleet.io/hyperv-isolation=true, and pods whose images are for an older Windows build than the node’s (e.g. 2019 images on 2022) run under Hyper-V isolation with the RuntimeClass windows-<release>-hyperv, which the webhook assigns. The hosts need the Hyper-V role (on a VM, nested virtualization): winfleet check --host verifies it. Default false',
                      },
                    },
                  },
                  activeDirectory: {
                    type: 'object',
                    required: ['domain', 'credentialsSecretRef'],
                    description:
                      'Joins the pool’s hosts to an Active Directory domain before their kubelet first registers: a hostname of at most 15 characters (NetBIOS, RFC 1123; renamed and restarted when needed), the domain join, a restart. Removing a host leaves the domain. Absent: no domain join',
                    properties: {
                      domain: {
                        type: 'string',
                        minLength: 3,
                        maxLength: domainNameMaxLength,
                        pattern:
                          '^[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?(\\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)+$',
                        description: 'The domain’s DNS name, e.g. corp.example.com',
                      },
                      organizationalUnit: {
                        type: 'string',
                        minLength: 4,
                        maxLength: organizationalUnitMaxLength,
                        description:
                          'Distinguished name of the OU the computer accounts go into, e.g. OU=Kubernetes,DC=corp,DC=example,DC=com (its DC= parts are the domain’s). Absent: the domain’s default Computers container',
                      },
                      credentialsSecretRef: {
                        type: 'object',
                        required: ['name'],
                        description:
                          'A Secret in the pool’s own namespace (never the operator’s) with the keys username (user, DOMAIN\\user or user@domain) and password of an account allowed to join computers, and the annotation winfleet.io/domain-join-pools listing this pool’s name (comma-separated): a Secret that does not name the pool is never read for it. They reach only SSH hosts whose spec.hostKey an admin pinned, in memory (an SSH session’s standard input), never a file, a command line or a cmdlet parameter; removal leaves the domain without them',
                        properties: {
                          name: {
                            type: 'string',
                            minLength: 1,
                            maxLength: 253,
                            description: 'The Secret’s name, in the pool’s namespace',
                          },
                        },
                      },
                    },
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
                  hosts: {
                    type: 'integer',
                    format: 'int32',
                    minimum: 0,
                    description: 'WindowsHosts the selector matches',
                  },
                  readyHosts: {
                    type: 'integer',
                    format: 'int32',
                    minimum: 0,
                    description: 'Of them, those whose Node is Ready',
                  },
                  updatedHosts: {
                    type: 'integer',
                    format: 'int32',
                    minimum: 0,
                    description: 'Of them, those with no change left to make',
                  },
                  unavailableHosts: {
                    type: 'integer',
                    format: 'int32',
                    minimum: 0,
                    description: 'Of them, those NotReady or in a change (cordoned, draining, …)',
                  },
                  hostsInProgress: {
                    type: 'array',
                    description: 'Hosts in a change and the step each is at',
                    items: {
                      type: 'object',
                      description: 'A host in a change',
                      required: ['name', 'step'],
                      properties: {
                        name: { type: 'string', description: 'The WindowsHost, namespace/name' },
                        step: {
                          type: 'string',
                          description: 'Cordon, Drain, Apply, Reboot, WaitReady or Uncordon',
                        },
                        since: { type: 'string', description: 'When it entered the step' },
                      },
                    },
                  },
                  migration: {
                    type: 'object',
                    description: 'The migration from the pool spec.replaces names',
                    required: ['replaces', 'phase', 'oldHosts', 'retiredHosts', 'message'],
                    properties: {
                      replaces: { type: 'string', description: 'The pool replaced' },
                      phase: {
                        type: 'string',
                        enum: [...migrationPhases],
                        description: 'Invalid, Waiting, Migrating, Blocked or Complete',
                      },
                      observedGeneration: {
                        type: 'integer',
                        format: 'int64',
                        description: 'The metadata.generation this was computed for',
                      },
                      build: {
                        type: 'string',
                        description: 'The Windows build of this pool’s hosts',
                      },
                      oldHosts: {
                        type: 'integer',
                        format: 'int32',
                        minimum: 0,
                        description: 'Hosts of the old pool',
                      },
                      retiredHosts: {
                        type: 'integer',
                        format: 'int32',
                        minimum: 0,
                        description: 'Of them, drained and left cordoned',
                      },
                      blockedWorkloads: {
                        type: 'array',
                        description: 'Blocked: the workloads that cannot move, and why',
                        items: {
                          type: 'object',
                          description: 'A workload with pods on the old pool that cannot move',
                          required: ['namespace', 'kind', 'name'],
                          properties: {
                            namespace: { type: 'string', description: 'Its namespace' },
                            kind: {
                              type: 'string',
                              description: 'Deployment, StatefulSet, Job, CronJob or Pod',
                            },
                            name: { type: 'string', description: 'Its name' },
                            images: {
                              type: 'array',
                              description: 'Its container images',
                              items: { type: 'string' },
                            },
                            reasons: {
                              type: 'array',
                              description: 'Why it cannot run on the new build, and the fix',
                              items: { type: 'string' },
                            },
                          },
                        },
                      },
                      message: { type: 'string', description: 'What is happening, or what to do' },
                    },
                  },
                  conditions: {
                    type: 'array',
                    description:
                      'Available, Progressing and Degraded (and Migrated with spec.replaces)',
                    items: poolCondition,
                    'x-kubernetes-list-type': 'map',
                    'x-kubernetes-list-map-keys': ['type'],
                  },
                },
              },
            },
          },
        },
      },
    ],
  },
};

/**
 * A CRD written as the API server reads it (`default`, `enum`, `x-kubernetes-*`), turned into
 * the client's typed model. The model names some keys differently (`_default`, `_enum`,
 * `x_kubernetes_*`) where it knows the schema node, but sends `items` and
 * `additionalProperties` untouched, so a CRD written in either naming alone loses keys on the
 * wire; written in the wire naming and converted, it keeps them all.
 */
function fromWire(crd: object): k8s.V1CustomResourceDefinition {
  return k8s.loadYaml<k8s.V1CustomResourceDefinition>(JSON.stringify(crd));
}

/** @package */
export const windowsNodePoolCrd = fromWire(windowsNodePoolWire);

/**
 * WindowsHost status.rollout (typed model): the host's change in a pool's rollout, recorded
 * before each action so a restarted operator resumes it (src/rollout/host-steps.ts); the same
 * schema windowsHostCrd carries as status.rollout.
 * @package
 */
export const hostRolloutStatusSchema: k8s.V1JSONSchemaProps = fromWire({
  apiVersion: 'apiextensions.k8s.io/v1',
  kind: 'CustomResourceDefinition',
  metadata: { name: 'rollout.winfleet.io' },
  spec: {
    group: apiGroup,
    scope: 'Namespaced',
    names: { plural: 'rollout', kind: 'Rollout' },
    versions: [
      {
        name: 'v1alpha1',
        served: true,
        storage: true,
        schema: { openAPIV3Schema: hostRolloutStatusWire },
      },
    ],
  },
}).spec.versions[0]!.schema!.openAPIV3Schema!;

/** The CRDs the operator installs (and the chart ships: `npm run chart:generate`). */
export const winfleetCrds = [windowsHostCrd, windowsNodePoolCrd];
