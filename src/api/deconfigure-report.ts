/**
 * The report a Pull-mode host's agent writes on its Node once it removed winfleet from its
 * host (deconfiguredAnnotation), and the request token it answers (deconfigureRequestAnnotation).
 * The agent writes it with the node's own credentials, so to the operator it is input from a
 * host that may be hostile: parsed strictly (exact keys, bounded lengths and counts, Windows
 * paths under C:\k only) and refused whole when anything is off. A node can only lie about
 * itself: the report decides when its own Node is deleted, nothing else.
 */
import { WinfleetError } from '../errors/catalog.ts';
import { compileSchema } from '../schema/validator.ts';
import { kubeDir } from '../servicesmanifest/host-paths.ts';
import { deconfiguredAnnotation } from './node-annotations.ts';

/** A request token: what the operator writes (a WindowsHost uid), 1–63 of [a-z0-9-]. */
export const deconfigureTokenPattern = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;

export interface DeconfigureReport {
  /** The request answered: the token of deconfigureRequestAnnotation. */
  request: string;
  /** The services the agent stopped and deleted (its own is deleted as it exits). */
  removedServices: string[];
  /**
   * What stays on the host until its next boot: files a running process holds (the agent and
   * its service shim), and the directories that hold them; Windows deletes them at the boot.
   */
  left: string[];
}

/** Room enough for the longest honest report, far under an object's 256 KiB of annotations. */
export const maxDeconfigureReportBytes = 16 * 1024;

const validate = compileSchema<DeconfigureReport>(
  {
    type: 'object',
    additionalProperties: false,
    required: ['request', 'removedServices', 'left'],
    properties: {
      request: { type: 'string', pattern: deconfigureTokenPattern.source },
      removedServices: {
        type: 'array',
        maxItems: 64,
        items: { type: 'string', pattern: '^[A-Za-z0-9_.-]{1,80}$' },
      },
      left: {
        type: 'array',
        maxItems: 64,
        items: {
          type: 'string',
          minLength: 1,
          maxLength: 260,
          pattern: '^C:\\\\k(\\\\[^\\\\/:*?"<>|\\u0000-\\u001f]+)*$',
        },
      },
    },
  },
  { code: 'WF_SCHEMA_INVALID', document: `the ${deconfiguredAnnotation} report` },
);

/** Parses the annotation's value; throws WF_SCHEMA_INVALID naming what is wrong. */
export function parseDeconfigureReport(text: string): DeconfigureReport {
  if (Buffer.byteLength(text) > maxDeconfigureReportBytes) {
    throw new WinfleetError(
      'WF_SCHEMA_INVALID',
      `The ${deconfiguredAnnotation} report is ${Buffer.byteLength(text)} bytes, more than ${maxDeconfigureReportBytes}`,
    );
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new WinfleetError(
      'WF_SCHEMA_INVALID',
      `The ${deconfiguredAnnotation} report is not JSON: ${(error as Error).message}`,
    );
  }
  return validate(value);
}

/** The annotation's value for `report`, checked as the operator will read it. */
export function formatDeconfigureReport(report: DeconfigureReport): string {
  const text = JSON.stringify(report);
  parseDeconfigureReport(text);
  return text;
}

/** For messages: what the report says stays until the next boot, or that nothing does. */
export function describeLeftovers(report: DeconfigureReport): string {
  return report.left.length === 0
    ? `nothing of winfleet's is left under ${kubeDir}`
    : `Windows deletes at the next boot what running processes still held: ${report.left.join(', ')}`;
}
