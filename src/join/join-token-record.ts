/**
 * The record of a join token (`winfleet join-command`): the ConfigMap
 * `winfleet-join-token-<id>` in the operator's namespace, key `token.json`. The token itself is
 * a bootstrap token Secret in kube-system, which the operator may create and delete but never
 * read; the record is what the operator reads and updates when a host uses the token: which
 * pool the token joins hosts to, how many uses it has left, until when, the labels its hosts
 * get, and the hosts that used it. Deleting the record revokes the token for winfleet (its CSR
 * approver finds no record and denies), whatever is left of the Secret.
 *
 * It holds nothing secret (never the token's secret half). It is parsed strictly: the CSR
 * approver approves nothing on a record it does not fully understand.
 */

import { awsInstanceIdPattern } from '../pki/instance-identity.ts';
import { compileSchema, invalidDocument } from '../schema/validator.ts';

/** Label on the record and on the token's Secret: the token id. */
export const joinTokenLabel = 'winfleet.io/join-token';
export const joinTokenRecordKey = 'token.json';
/** The most uses one token may have. */
export const maxJoinTokenUses = 1000;

/** The record ConfigMap of token `id`. */
export function joinTokenRecordName(id: string): string {
  return `winfleet-join-token-${id}`;
}

/** A host that joined with the token. */
export interface JoinTokenUse {
  /** The node name (and WindowsHost name) it took. */
  nodeName: string;
  /** The UID of the CSR it was approved for. */
  csr: string;
  /** When (RFC 3339). */
  at: string;
}

export interface JoinTokenRecord {
  /** The bootstrap token id: 6 characters [a-z0-9]. */
  tokenId: string;
  /** The WindowsNodePool hosts join. */
  pool: string;
  /** The pool's namespace: where the hosts' WindowsHosts are created. */
  namespace: string;
  /** Uses the token was issued with. */
  uses: number;
  /** Uses left; the token's Secret is deleted when it reaches 0. */
  usesLeft: number;
  /** When the token expires (RFC 3339, as the Secret's `expiration`). */
  expires: string;
  /** The labels each host's WindowsHost gets: they make the pool's selector select it. */
  labels: Record<string, string>;
  /** The hosts that used the token, oldest first. */
  joined: JoinTokenUse[];
  /**
   * The one EC2 instance the token admits (`join-command --instance-id`): the joining host's
   * signed identity document must name it (pki/instance-identity.ts).
   */
  instanceId?: string;
}

const nameSchema = {
  type: 'string',
  minLength: 1,
  maxLength: 63,
  pattern: '^[a-z0-9]([-a-z0-9]*[a-z0-9])?$',
} as const;

/** An API timestamp in UTC, as the API server and winfleet write them. */
const utcTime = {
  type: 'string',
  pattern: '^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}(\\.\\d+)?Z$',
} as const;

const schema = {
  type: 'object',
  additionalProperties: false,
  required: ['tokenId', 'pool', 'namespace', 'uses', 'usesLeft', 'expires', 'labels', 'joined'],
  properties: {
    tokenId: { type: 'string', pattern: '^[a-z0-9]{6}$' },
    instanceId: { type: 'string', pattern: awsInstanceIdPattern.source },
    pool: nameSchema,
    namespace: nameSchema,
    uses: { type: 'integer', minimum: 1, maximum: maxJoinTokenUses },
    usesLeft: { type: 'integer', minimum: 0, maximum: maxJoinTokenUses },
    expires: utcTime,
    labels: {
      type: 'object',
      maxProperties: 64,
      propertyNames: { maxLength: 317 },
      additionalProperties: { type: 'string', maxLength: 63 },
    },
    joined: {
      type: 'array',
      maxItems: maxJoinTokenUses,
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['nodeName', 'csr', 'at'],
        properties: {
          nodeName: nameSchema,
          csr: { type: 'string', minLength: 1, maxLength: 128 },
          at: utcTime,
        },
      },
    },
  },
} as const;

const validate = compileSchema<JoinTokenRecord>(schema, {
  code: 'WF_JOIN_TOKEN_RECORD_INVALID',
  document: `ConfigMap winfleet-join-token-<id> key ${joinTokenRecordKey}`,
});

/**
 * Parses the record ConfigMap `name`'s `token.json` strictly: the schema, the token id the
 * name carries, and uses that add up. Throws WF_JOIN_TOKEN_RECORD_INVALID naming each problem.
 */
export function parseJoinTokenRecord(name: string, text: string | undefined): JoinTokenRecord {
  const document = `ConfigMap ${name} key ${joinTokenRecordKey}`;
  let value: unknown;
  try {
    value = JSON.parse(text ?? '');
  } catch (error) {
    throw invalidDocument('WF_JOIN_TOKEN_RECORD_INVALID', document, [
      `not JSON (${(error as Error).message}); winfleet join-command writes it: revoke the token and make a new one`,
    ]);
  }
  const record = validate(value, document);
  const problems: string[] = [];
  if (joinTokenRecordName(record.tokenId) !== name) {
    problems.push(`tokenId: "${record.tokenId}" is not the id the ConfigMap's name carries`);
  }
  for (const [field, time] of [
    ['expires', record.expires],
    ...record.joined.map((use, i) => [`joined.${i}.at`, use.at]),
  ]) {
    if (Number.isNaN(Date.parse(time!))) problems.push(`${field}: "${time}" is not a time`);
  }
  if (record.usesLeft > record.uses) {
    problems.push(`usesLeft: ${record.usesLeft} is more than uses (${record.uses})`);
  }
  if (record.uses - record.usesLeft !== record.joined.length) {
    problems.push(
      `joined: ${record.joined.length} hosts, but ${record.uses - record.usesLeft} uses were taken`,
    );
  }
  if (problems.length > 0)
    throw invalidDocument('WF_JOIN_TOKEN_RECORD_INVALID', document, problems);
  return record;
}

/** The record as the ConfigMap stores it. */
export function formatJoinTokenRecord(record: JoinTokenRecord): string {
  return JSON.stringify(record);
}

/** Whether the token has expired at `now`. */
export function joinTokenExpired(record: JoinTokenRecord, now: Date): boolean {
  return Date.parse(record.expires) <= now.getTime();
}

/**
 * Why a token is of no more use (what `winfleet join-tokens prune` deletes), or undefined for
 * one that may still join a host. A used-up token's Secret still authenticates until it
 * expires (its CSRs are denied), so pruning it takes that away too.
 * @package
 */
export function joinTokenSpent(record: JoinTokenRecord, now: Date): string | undefined {
  if (joinTokenExpired(record, now)) return `expired at ${record.expires}`;
  if (record.usesLeft <= 0) return `used up (${record.uses} of ${record.uses})`;
  return undefined;
}
