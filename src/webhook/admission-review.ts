/**
 * AdmissionReview (admission.k8s.io/v1) in and out. Anything a client can send is checked
 * before it is used: a body that is not an AdmissionReview gets an HTTP 400 whose message
 * says what is wrong, never a crash.
 */
import { hasCode, WinfleetError } from '../errors/catalog.ts';
import { fitWarning } from './admission-warning.ts';
import type { JsonPatchOperation } from './json-patch.ts';

/** Bodies larger than this are refused (the API server sends at most a few MiB). */
export const maxAdmissionBodyBytes = 8 * 1024 * 1024;

/** @package */
export interface AdmissionRequest {
  uid: string;
  kind: { group: string; version: string; kind: string };
  operation: string;
  namespace?: string;
  name?: string;
  /** The subresource, e.g. "ephemeralcontainers" for an UPDATE of pods/ephemeralcontainers. */
  subResource?: string;
  object?: Record<string, unknown>;
  /** The object before an UPDATE. */
  oldObject?: Record<string, unknown>;
  dryRun?: boolean;
  userInfo?: { username?: string; groups?: string[] };
}

/** What a WF_ADMISSION_INPUT error carries: the HTTP status to answer with. */
export interface AdmissionInputDetails {
  readonly httpStatus: number;
}

/** A request body that is not a usable AdmissionReview; answered with `httpStatus`. */
export function admissionInputError(
  message: string,
  httpStatus = 400,
): WinfleetError<AdmissionInputDetails> {
  return new WinfleetError('WF_ADMISSION_INPUT', message, { details: { httpStatus } });
}

/** The HTTP status to answer a request that failed with `error`: 400 unless it says otherwise. */
export function admissionInputStatus(error: unknown): number {
  if (!hasCode(error, 'WF_ADMISSION_INPUT')) return 400;
  return (error as WinfleetError<AdmissionInputDetails>).details?.httpStatus ?? 400;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/** Parses and checks an AdmissionReview body. */
export function parseAdmissionReview(body: string): AdmissionRequest {
  let review: unknown;
  try {
    review = JSON.parse(body);
  } catch (error) {
    throw admissionInputError(`Request body is not JSON: ${(error as Error).message}`);
  }
  if (!isObject(review))
    throw admissionInputError('Request body must be a JSON object (an AdmissionReview)');
  if (review.kind !== 'AdmissionReview') {
    throw admissionInputError(
      `kind: expected "AdmissionReview", got ${JSON.stringify(review.kind ?? null)}`,
    );
  }
  if (review.apiVersion !== 'admission.k8s.io/v1') {
    throw admissionInputError(
      `apiVersion: expected "admission.k8s.io/v1", got ${JSON.stringify(review.apiVersion ?? null)}; register the webhook with admissionReviewVersions: [v1]`,
    );
  }
  const request = review.request;
  if (!isObject(request)) throw admissionInputError('request: missing or not an object');
  if (typeof request.uid !== 'string' || request.uid.length === 0 || request.uid.length > 128) {
    throw admissionInputError('request.uid: must be a non-empty string');
  }
  const kind = request.kind;
  if (!isObject(kind) || typeof kind.kind !== 'string' || typeof kind.version !== 'string') {
    throw admissionInputError('request.kind: must be {group, version, kind}');
  }
  if (typeof request.operation !== 'string')
    throw admissionInputError('request.operation: must be a string');
  if (request.object !== undefined && request.object !== null && !isObject(request.object)) {
    throw admissionInputError('request.object: must be an object');
  }
  if (
    request.oldObject !== undefined &&
    request.oldObject !== null &&
    !isObject(request.oldObject)
  ) {
    throw admissionInputError('request.oldObject: must be an object');
  }
  if (request.subResource !== undefined && typeof request.subResource !== 'string') {
    throw admissionInputError('request.subResource: must be a string');
  }
  return {
    uid: request.uid,
    kind: {
      group: typeof kind.group === 'string' ? kind.group : '',
      version: kind.version,
      kind: kind.kind,
    },
    operation: request.operation,
    namespace: typeof request.namespace === 'string' ? request.namespace : undefined,
    name: typeof request.name === 'string' ? request.name : undefined,
    ...(typeof request.subResource === 'string' && request.subResource !== ''
      ? { subResource: request.subResource }
      : {}),
    object: isObject(request.object) ? request.object : undefined,
    ...(isObject(request.oldObject) ? { oldObject: request.oldObject } : {}),
    dryRun: request.dryRun === true,
    userInfo: isObject(request.userInfo)
      ? (request.userInfo as AdmissionRequest['userInfo'])
      : undefined,
  };
}

/** @package */
export interface AdmissionDecision {
  allowed: boolean;
  patch?: JsonPatchOperation[];
  warnings?: string[];
  /** Shown to the user when the request is denied. */
  message?: string;
  /** HTTP-like code for a denial (403 by default). */
  code?: number;
}

/** Renders the AdmissionReview response for `uid`. */
export function admissionResponse(uid: string, decision: AdmissionDecision): string {
  const response: Record<string, unknown> = { uid, allowed: decision.allowed };
  if (decision.patch && decision.patch.length > 0) {
    response.patchType = 'JSONPatch';
    response.patch = Buffer.from(JSON.stringify(decision.patch)).toString('base64');
  }
  if (decision.warnings && decision.warnings.length > 0) {
    // Each already fits; this only guards the API server's limit (see admission-warning.ts).
    response.warnings = [...new Set(decision.warnings)].map(fitWarning);
  }
  if (!decision.allowed) {
    response.status = {
      code: decision.code ?? 403,
      reason: 'Forbidden',
      message: decision.message ?? 'denied by winfleet',
    };
  }
  return JSON.stringify({ apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview', response });
}
