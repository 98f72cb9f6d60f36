/**
 * Reading the API server's audit log (ClusterOptions.auditPolicy): which requests a user made
 * and which of them were refused, with enough detail (verb, resource, namespace, name) for a
 * failure message to say exactly which permission is missing.
 */
import { readFile } from 'node:fs/promises';
import * as k8s from '@kubernetes/client-node';
import { waitFor } from '../../src/kube/wait-for.ts';
import type { AuditPolicy } from '../cluster/start-cluster.ts';

/** The fields of an audit.k8s.io/v1 Event that the tests read (Metadata level). */
export interface AuditEvent {
  auditID: string;
  stage: string;
  verb: string;
  requestURI: string;
  user: { username: string; groups?: string[] };
  objectRef?: {
    resource?: string;
    subresource?: string;
    namespace?: string;
    name?: string;
    apiGroup?: string;
  };
  responseStatus?: { code?: number; reason?: string; message?: string };
  annotations?: Record<string, string>;
}

/**
 * Metadata-level events of every service account's requests and nothing else (the control
 * plane's own components authenticate with the admin certificate), without the
 * RequestReceived stage: one event per answered request, two for a long-running one.
 */
export const serviceAccountsAuditPolicy: AuditPolicy = {
  apiVersion: 'audit.k8s.io/v1',
  kind: 'Policy',
  omitStages: ['RequestReceived'],
  rules: [{ level: 'Metadata', userGroups: ['system:serviceaccounts'] }, { level: 'None' }],
};

/** The username the API server gives a ServiceAccount's tokens. */
export function serviceAccountUsername(namespace: string, name: string): string {
  return `system:serviceaccount:${namespace}:${name}`;
}

/**
 * Parses an audit log of JSON lines. A last line without its newline is still being written
 * and is left out; any other line that is not an audit.k8s.io/v1 Event is an error naming it.
 */
export function parseAuditLog(text: string): AuditEvent[] {
  const lines = text.split('\n');
  // The part after the last newline is incomplete (or empty).
  lines.pop();
  const events: AuditEvent[] = [];
  lines.forEach((line, index) => {
    if (line.trim() === '') return;
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch (error) {
      throw new Error(`audit log line ${index + 1} is not JSON: ${(error as Error).message}`);
    }
    events.push(asAuditEvent(value, index + 1));
  });
  return events;
}

function asAuditEvent(value: unknown, line: number): AuditEvent {
  const e = value as Partial<AuditEvent> & { kind?: unknown; apiVersion?: unknown };
  const where = `audit log line ${line}`;
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw new Error(`${where} is not a JSON object`);
  if (e.kind !== 'Event' || e.apiVersion !== 'audit.k8s.io/v1')
    throw new Error(
      `${where} is not an audit.k8s.io/v1 Event (kind ${String(e.kind)}, apiVersion ${String(e.apiVersion)})`,
    );
  for (const field of ['auditID', 'stage', 'verb', 'requestURI'] as const)
    if (typeof e[field] !== 'string') throw new Error(`${where}: field ${field} is not a string`);
  if (typeof e.user?.username !== 'string')
    throw new Error(`${where}: field user.username is not a string`);
  const code = e.responseStatus?.code;
  if (code !== undefined && typeof code !== 'number')
    throw new Error(`${where}: field responseStatus.code is not a number`);
  return e as AuditEvent;
}

/** Reads and parses the audit log at `path`. */
export async function readAuditLog(path: string): Promise<AuditEvent[]> {
  return parseAuditLog(await readFile(path, 'utf8'));
}

/**
 * The requests `username` made, one event per request (the last stage the log holds for its
 * auditID), in log order.
 */
export function requestsBy(events: AuditEvent[], username: string): AuditEvent[] {
  const byId = new Map<string, AuditEvent>();
  for (const e of events) {
    if (e.user.username !== username) continue;
    // Re-inserting keeps the first position; the later stage replaces the earlier.
    byId.set(e.auditID, e);
  }
  return [...byId.values()];
}

/** The requests answered 403 Forbidden. */
export function forbiddenRequests(requests: AuditEvent[]): AuditEvent[] {
  return requests.filter((e) => e.responseStatus?.code === 403);
}

/**
 * One line for a request: verb, resource (with API group and subresource), namespace/name and
 * the answer, e.g. `get secrets in kube-system named bootstrap-token-x → 403 (/api/v1/…)`.
 */
export function describeAuditEvent(e: AuditEvent): string {
  const ref = e.objectRef;
  const resource = ref?.resource
    ? `${ref.resource}${ref.subresource ? `/${ref.subresource}` : ''}${ref.apiGroup ? `.${ref.apiGroup}` : ''}`
    : '(no resource)';
  const where = ref?.namespace ? ` in ${ref.namespace}` : ' (cluster scope)';
  const name = ref?.name ? ` named ${ref.name}` : '';
  const code = e.responseStatus?.code ?? '?';
  return `${e.verb} ${resource}${where}${name} → ${code} (${e.requestURI})`;
}

/**
 * Waits until the audit log holds every request `kc`'s user has had answered so far: makes one
 * more request (a SelfSubjectReview, allowed to every authenticated user), takes its Audit-Id
 * from the answer, and waits for that request's event in the log. Returns the parsed log.
 */
export async function auditLogUpTo(path: string, kc: k8s.KubeConfig): Promise<AuditEvent[]> {
  const answer = await kc
    .makeApiClient(k8s.AuthenticationV1Api)
    .createSelfSubjectReviewWithHttpInfo({ body: { apiVersion: 'authentication.k8s.io/v1' } });
  const auditId = answer.headers['audit-id'];
  if (!auditId) throw new Error('the API server answered without an Audit-Id header');
  return waitFor(
    async () => {
      const events = await readAuditLog(path);
      return events.some((e) => e.auditID === auditId && e.stage === 'ResponseComplete')
        ? events
        : undefined;
    },
    { description: `audit event ${auditId} in ${path}`, timeoutMs: 20_000, intervalMs: 200 },
  );
}
