/**
 * The one catalog of errors winfleet raises (in the spirit of Fastify's `lib/errors.js`):
 * each has a stable code, says whether retrying can fix it, and carries a message that names
 * the field or value and the fix. Controllers decide requeue or terminal from the code, never
 * from an error's class. Grep a code to find every place it is raised and tested.
 *
 * Errors that do not come from winfleet (network failures, API server 5xx and conflicts) are
 * retryable: the world may change. Anything the user must fix is terminal until something the
 * controller watches changes.
 */

interface CatalogEntry {
  /** Whether retrying the same work later can succeed without anyone changing anything. */
  readonly retryable: boolean;
  /** What the code means, for the README and for people reading logs. */
  readonly summary: string;
}

/** @package */
export const errorCatalog = {
  // Configuration and input a user or the cluster sends.
  WF_CONFIG_INVALID: { retryable: false, summary: 'winfleet-config does not match its schema' },
  WF_SCHEMA_INVALID: { retryable: false, summary: 'a document does not match its schema' },
  WF_ADMISSION_INPUT: { retryable: false, summary: 'an AdmissionReview request is malformed' },
  WF_FLAG_INVALID: { retryable: false, summary: 'a command-line flag has a bad value' },
  // The winfleet command line (src/cli): what ends a command with exit code 1 or 3.
  WF_COMMAND_FAILED: {
    retryable: false,
    summary: 'a winfleet command found a problem it reports (a failed check, a host not as asked)',
  },
  WF_CLUSTER_UNREACHABLE: {
    retryable: true,
    summary: 'the API server could not be reached, or refused the request',
  },
  WF_CSR_INVALID: {
    retryable: false,
    summary: 'a certificate signing request is malformed, not canonical DER or ambiguous',
  },
  WF_KUBE_PROXY_CERTIFICATE: {
    retryable: true,
    summary:
      "the agent could not get kube-proxy's client certificate (CSR not created, or the issued certificate does not match the request)",
  },
  WF_KUBECONFIG_INVALID: {
    retryable: false,
    summary: 'the kubeconfig lacks the cluster, CA or file winfleet needs',
  },
  // Host access.
  WF_SSH_SECRET_MISSING: {
    retryable: false,
    summary: 'the SSH key Secret a WindowsHost names does not exist',
  },
  WF_SSH_KEY_MISSING: { retryable: false, summary: 'the SSH key Secret has no such key' },
  WF_SSH_KEY_INVALID: { retryable: false, summary: 'the SSH private key cannot be parsed' },
  WF_SSH_UNREACHABLE: { retryable: true, summary: 'the host does not answer on its SSH port' },
  // Retryable: the fix (authorized keys on the host) is made where no controller watches.
  WF_SSH_AUTH_REFUSED: { retryable: true, summary: 'the host refused the SSH key' },
  WF_SSH_HOST_KEY_CHANGED: {
    retryable: false,
    summary: 'the host presented a key other than the pinned one',
  },
  WF_SSH_DROPPED: { retryable: true, summary: 'the SSH connection dropped mid-command' },
  WF_SSH_TIMEOUT: { retryable: true, summary: 'a command on the host did not finish in time' },
  WF_SSH_FILE_COPY: { retryable: true, summary: 'copying a file to the host over SFTP failed' },
  WF_REMOTE_COMMAND_FAILED: { retryable: true, summary: 'a catalog script failed on the host' },
  // Retryable (slowly, with the backoff): the fix (reinstalling or renaming the host) is made
  // where no controller watches, and nothing the user can fix is terminal without a watch.
  WF_HOST_UNSUPPORTED: {
    retryable: true,
    summary: 'the host runs a Windows build winfleet does not support',
  },
  WF_HOST_DISK_FULL: { retryable: true, summary: 'the host has too little free disk' },
  WF_HOST_SETTINGS_FAILED: {
    retryable: true,
    summary: 'the agent could not apply the host settings (trusted CAs, registry hosts, proxy)',
  },
  // Retryable: the fix (the feature installed, or the config allowing winfleet to) is made
  // where no controller watches.
  WF_HOST_CONTAINERS_MISSING: {
    retryable: true,
    summary: 'the host lacks the Windows Containers feature and winfleet may not install it',
  },
  // Retryable: the spec, the Secret or the host is fixed where no controller watches.
  WF_HOST_AD_REFUSED: {
    retryable: true,
    summary: "the host's pool asks for an Active Directory join that cannot be made as configured",
  },
  // Retryable: the Secret's annotation is fixed where no controller watches.
  WF_HOST_AD_SECRET_NOT_OPTED_IN: {
    retryable: true,
    summary: "the pool's Active Directory credentials Secret does not name the pool",
  },
  // Retryable: an admin sets spec.hostKey.
  WF_HOST_KEY_NOT_PINNED: {
    retryable: true,
    summary: 'the host has no admin-pinned SSH host key, so it gets no domain credentials',
  },
  // Retryable with backoff: the Secret fixed, the domain controller back.
  WF_HOST_DOMAIN_JOIN_FAILED: {
    retryable: true,
    summary: 'joining the host to (or removing it from) its Active Directory domain failed',
  },
  WF_HOST_NODE_NAME_CHANGED: {
    retryable: true,
    summary: 'the host now has a name other than the node it joined as',
  },
  // Retryable: the other WindowsHost or the Node may go away.
  WF_HOST_NODE_NAME_TAKEN: {
    retryable: true,
    summary: 'another WindowsHost holds the node name',
  },
  // Retryable: the Node may go away or be annotated with this host's identity.
  WF_HOST_NODE_NOT_OWNED: {
    retryable: true,
    summary: "a Node of the host's node name exists without the host's identity",
  },
  WF_HOST_REBUILT: {
    retryable: false,
    summary: 'the host was rebuilt while its Node still exists; it rejoins on winfleet.io/rejoin',
  },
  // Payload and the operator-agent contract.
  WF_PAYLOAD_INVALID: { retryable: false, summary: 'payload.json or a payload file is invalid' },
  WF_PAYLOAD_DOWNLOAD: { retryable: true, summary: 'a payload file cannot be downloaded' },
  WF_PAYLOAD_REGISTRY_UNAVAILABLE: {
    retryable: true,
    summary: 'the payload registry cannot be reached, from the host nor from the operator',
  },
  WF_MANIFEST_INVALID: { retryable: false, summary: 'a services manifest is invalid' },
  // Retryable: deleting the published ConfigMap also fixes it, and ConfigMaps are not watched.
  WF_MANIFEST_VERSION_REUSED: {
    retryable: true,
    summary: 'a published services version already holds a different manifest',
  },
  WF_MANIFEST_UNPUBLISHED: {
    retryable: false,
    summary: 'a services manifest the operator did not publish was refused by the agent',
  },
  WF_SERVICE_BINARY_MISMATCH: {
    retryable: false,
    summary:
      'a service binary on the host differs from its manifest digest; the service was not started',
  },
  WF_AGENT_CONFIG_INVALID: { retryable: false, summary: 'bootstrap.json or agent.json is invalid' },
  WF_JOIN_INFO_INVALID: {
    retryable: false,
    summary: 'the winfleet-join ConfigMap a joining host reads is invalid',
  },
  WF_JOIN_TOKEN_RECORD_INVALID: {
    retryable: false,
    summary: 'the record ConfigMap of a join token (winfleet-join-token-<id>) is invalid',
  },
  WF_AGENT_STEP_FAILED: { retryable: true, summary: 'a step of the agent failed' },
  // Joining by command (src/join, winfleet-agent join).
  WF_JOIN_REFUSED: {
    retryable: false,
    summary:
      'a joining host refused the cluster: cluster-info was not signed with the join token or its CA does not match the pinned hash',
  },
  WF_JOIN_DISCOVERY_PENDING: {
    retryable: true,
    summary: 'cluster-info cannot be read yet, or is not yet signed for the join token',
  },
  WF_INSTANCE_IDENTITY: {
    retryable: false,
    summary:
      'a host joining a pool that requires instance identity could not read it from the instance metadata service',
  },
  WF_JOIN_SCRIPT_INVALID: {
    retryable: false,
    summary: 'a value for a join script is out of shape (URL, token, hash, namespace, node name)',
  },
  WF_METRIC_SAMPLE_INVALID: {
    retryable: false,
    summary: 'a health pass produced a metric sample the registry does not take (a winfleet bug)',
  },
  WF_WINDOWS_UPDATE_FAILED: {
    retryable: true,
    summary: 'installing a Windows update (an .msu from the payload) failed',
  },
  WF_SERVICE_CONTROL: { retryable: true, summary: 'the Service Control Manager refused a request' },
  WF_HNS_UNAVAILABLE: { retryable: true, summary: 'the Host Networking Service cannot be reached' },
  WF_AGENT_FILE_MISSING: { retryable: false, summary: 'a file the agent needs is not on the host' },
  WF_SERVICE_STUCK: {
    retryable: true,
    summary: 'a Windows service did not stop, or was not removed, in time',
  },
  WF_FILE_IN_USE: { retryable: true, summary: 'another process holds a file the agent replaces' },
  WF_WINDOWS_COMMAND_FAILED: {
    retryable: true,
    summary: 'a Windows program the agent ran (PowerShell, shutdown.exe) failed',
  },
  // Image lookups.
  WF_REGISTRY_LOOKUP: {
    retryable: true,
    summary: 'an image could not be resolved in its registry',
  },
  // The admission webhook's objects when someone else (the Helm chart, cert-manager) owns them.
  // Retryable: installing or upgrading the chart, or cert-manager issuing, fixes them unwatched.
  WF_WEBHOOK_CONFIGURATION_MISSING: {
    retryable: true,
    summary: 'a webhook configuration the operator only patches does not exist or lacks a webhook',
  },
  WF_WEBHOOK_CERTIFICATE_INVALID: {
    retryable: true,
    summary: 'the webhook certificate Secret is missing or holds no usable tls.crt and tls.key',
  },
  // Waiting and winfleet's own invariants.
  WF_TIMEOUT: { retryable: true, summary: 'a condition did not hold before its deadline' },
  WF_INVARIANT: {
    retryable: false,
    summary: 'winfleet broke one of its own rules; report it with the message',
  },
  // Anything a controller decides it cannot fix by retrying.
  WF_TERMINAL: { retryable: false, summary: 'retrying cannot fix this; the message says what can' },
} as const satisfies Record<string, CatalogEntry>;

export type ErrorCode = keyof typeof errorCatalog;

/** An error from the catalog. Extra data goes in `details`, never in a subclass of its own. */
export class WinfleetError<D = unknown> extends Error {
  readonly code: ErrorCode;
  readonly details: D | undefined;

  constructor(code: ErrorCode, message: string, options?: ErrorOptions & { details?: D }) {
    super(message, options);
    this.name = 'WinfleetError';
    this.code = code;
    this.details = options?.details;
  }

  get retryable(): boolean {
    return errorCatalog[this.code].retryable;
  }
}

/** The catalog code of an error, or undefined for errors that are not winfleet's. */
export function errorCode(error: unknown): ErrorCode | undefined {
  return error instanceof WinfleetError ? error.code : undefined;
}

/** True when the error carries this code. */
export function hasCode(error: unknown, code: ErrorCode): boolean {
  return errorCode(error) === code;
}

/** Whether retrying may help: the catalog says for winfleet's errors; anything else may pass. */
export function isRetryable(error: unknown): boolean {
  return error instanceof WinfleetError ? error.retryable : true;
}
