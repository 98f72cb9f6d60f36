/** A certificate signing request as the CSR policies read it, and what they decide on it. */
import type { WindowsHost } from '../../api/windows-host.ts';
import type { JoinTokenRecord } from '../../join/join-token-record.ts';
import type { ParsedCsr } from '../../pki/certificates.ts';

/** @package */
export interface CsrRequest {
  name: string;
  /** metadata.uid (a join by command records it on the WindowsHost it creates). */
  uid?: string;
  signerName: string;
  username: string;
  groups: string[];
  usages: string[];
  /** spec.expirationSeconds, when the requester set it. */
  expirationSeconds?: number;
  /** Undefined when the request could not be parsed; `parseProblem` then says why. */
  parsed?: ParsedCsr;
  parseProblem?: string;
}

/** @package */
export type CsrDecision =
  | { action: 'approve'; reason: string; host: WindowsHost }
  /** `check` names the check that failed, where the policy names its checks. */
  | { action: 'deny'; reason: string; host?: WindowsHost; check?: string }
  | { action: 'ignore'; reason: string }
  /** Not decidable yet (the host's status is still being written); look again shortly. */
  | { action: 'retry'; reason: string }
  /** A join by command that passed every check: create its WindowsHost, take a use, approve. */
  | { action: 'claim'; reason: string; claim: PullJoinClaim };

/** A CSR that passed every check: the WindowsHost to create and the use to take. */
export interface PullJoinClaim {
  tokenId: string;
  csrUid: string;
  nodeName: string;
  record: JoinTokenRecord;
  /** The WindowsHost to create (its creation is the claim on the name). */
  host: WindowsHost;
}
