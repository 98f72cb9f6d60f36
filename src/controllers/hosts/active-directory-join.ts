/**
 * A host of a pool with spec.activeDirectory joins the domain before its kubelet first
 * registers (issue 16, section 4). Each join pass does the one next step, level-triggered, from
 * the host's facts (Win32_ComputerSystem's PartOfDomain and Domain, the hostname now and the one
 * pending a reboot):
 *
 * | the host                                         | the pass                                 |
 * |--------------------------------------------------|------------------------------------------|
 * | spec.nodeName over 15 characters / not RFC 1123  | refused, nothing changed (quotes limit)  |
 * | hostname not the planned one, in a workgroup     | Rename-Computer, restart                 |
 * | rename pending (NV Hostname is the planned one)  | restart                                  |
 * | planned hostname, in a workgroup                 | Add-Computer (credentials on stdin), restart |
 * | in a workgroup, no admin-pinned spec.hostKey     | refused (HostKeyNotPinned), nothing changed |
 * | joined to the pool's domain                      | go on (the join continues)               |
 * | joined to another domain                         | refused: winfleet does not move hosts    |
 *
 * ad-hostname.ts decides the hostname. A failed Add-Computer (wrong credentials, domain not
 * reachable) leaves the host in its workgroup: the pass fails with WF_HOST_DOMAIN_JOIN_FAILED
 * (reason DomainJoinFailed, naming the Secret and the domain) and is retried with the host
 * controller's backoff; nothing after it (token, files, kubelet) has run. The credentials are
 * read from the Secret for the one command, only when the Secret opts in to the pool
 * (winfleet.io/domain-join-pools) and the host's key was pinned by an admin (spec.hostKey), and
 * written to its stdin (domain-scripts.ts); they are never logged, bound to a cmdlet, put in
 * status, stored on the host, or sent to a host being removed (leaveDomain).
 *
 * A join that was done but whose restart did not happen (the restart command lost with the
 * connection) is restarted again on a later pass: status.activeDirectoryRestartAt records the
 * restart winfleet asked for, and a host whose last boot is older restarts again.
 */
import * as k8s from '@kubernetes/client-node';
import {
  activeDirectoryProblems,
  domainJoinPools,
  domainJoinPoolsAnnotation,
} from '../../api/active-directory.ts';
import { ConditionReason, ConditionType, EventReason, JoinStep } from '../../api/reasons.ts';
import type { WindowsHost } from '../../api/windows-host.ts';
import type { ActiveDirectorySpec, WindowsNodePool } from '../../api/windows-node-pool.ts';
import { errorCode, WinfleetError } from '../../errors/catalog.ts';
import type { HostStatus } from '../../fleet/host-status.ts';
import { governingPool } from '../../fleet/pool-observe.ts';
import {
  credentialsInput,
  type DomainCredentialsInput,
  leaveWorkgroup,
  qualifiedUsername,
} from '../../hostaccess/domain-scripts.ts';
import type { RemoteHost } from '../../hostaccess/remote-host.ts';
import type { HostFacts } from '../../hostaccess/remote-scripts.ts';
import { apiTime } from '../../kube/api-time.ts';
import { isNotFound } from '../../kube/client.ts';
import { type AdHostnamePlan, planAdHostname } from './ad-hostname.ts';
import type { HostControllerDeps } from './host-deps.ts';

/** A pool's Active Directory setting, as a host of it is joined with. */
export interface PoolActiveDirectory {
  /** The pool's name. */
  pool: string;
  /**
   * The pool's namespace (its hosts'), where its credentials Secret is read: never the
   * operator's own, or whoever may create a pool and a host in some namespace could have the
   * operator send the domain account it keeps there to a machine of theirs.
   */
  namespace: string;
  spec: ActiveDirectorySpec;
  /** The spec's problems (spec.activeDirectory.…: …); a host is not joined while there are any. */
  problems: string[];
}

/**
 * The Active Directory setting of the pool that governs `host` (the first by key of the pools
 * selecting it, as the rollout's assignPools decides); undefined for a host of no pool, or of a
 * pool without spec.activeDirectory.
 * @package
 */
export function poolActiveDirectory(
  pools: readonly WindowsNodePool[],
  host: WindowsHost,
): PoolActiveDirectory | undefined {
  const pool = governingPool(pools, host);
  const spec = pool?.spec.activeDirectory;
  if (!pool || spec === undefined) return undefined;
  return {
    pool: pool.metadata.name,
    namespace: pool.metadata.namespace ?? '',
    spec,
    problems: activeDirectoryProblems(spec),
  };
}

/**
 * Whether a (re-)bootstrap joins the host to its pool's domain: not when the host was already
 * bootstrapped into the cluster outside any domain (its pool got spec.activeDirectory later).
 * Renaming and joining it then would change its node name and restart it outside the pool's
 * rollout, so it is configured again as it is, and `skipped` says how to join it: remove and
 * add it again. A host that is in the domain, or was never bootstrapped, is joined as usual.
 * @package
 */
export function domainJoinForBootstrap(
  ad: PoolActiveDirectory | undefined,
  facts: Pick<HostFacts, 'partOfDomain'>,
  bootstrappedAt: string | undefined,
): { ad?: PoolActiveDirectory; skipped?: string } {
  if (!ad) return {};
  if (facts.partOfDomain || bootstrappedAt === undefined) return { ad };
  return {
    skipped: `Pool ${ad.pool} has spec.activeDirectory, but this host joined the cluster at ${bootstrappedAt}, before it, outside any domain: it is configured again as it is, not renamed, joined or restarted (that would change its node name outside the pool's rollout); to join it to ${ad.spec.domain}, remove the WindowsHost and add it again`,
  };
}

/** Keys ("namespace/name") of the hosts whose pool's AD credentials are Secret `namespace`/`name`. */
export function hostsNamingAdSecret(
  pools: readonly WindowsNodePool[],
  hosts: readonly WindowsHost[],
  namespace: string,
  name: string,
): string[] {
  const names = (ad: PoolActiveDirectory | undefined) =>
    ad?.namespace === namespace && ad.spec.credentialsSecretRef?.name === name;
  if (!pools.some((p) => p.metadata.namespace === namespace)) return [];
  return hosts
    .filter((h) => h.metadata.namespace === namespace && names(poolActiveDirectory(pools, h)))
    .map((h) => `${h.metadata.namespace}/${h.metadata.name}`);
}

/** The refusals of a join, each with its own reason. */
const refusals = {
  WF_HOST_AD_REFUSED: ConditionReason.ActiveDirectoryRefused,
  WF_HOST_AD_SECRET_NOT_OPTED_IN: ConditionReason.DomainCredentialsNotOptedIn,
  WF_HOST_KEY_NOT_PINNED: ConditionReason.HostKeyNotPinned,
} as const;

/** Refuses the join: WF_HOST_AD_REFUSED (or `code`), Degraded, nothing changed on the host. */
function refuse(
  hs: HostStatus,
  message: string,
  code: keyof typeof refusals = 'WF_HOST_AD_REFUSED',
): never {
  hs.set(ConditionType.Degraded, 'True', refusals[code], message);
  hs.error(JoinStep.ActiveDirectory, message);
  throw new WinfleetError(code, message);
}

/**
 * Why `host` may not receive its pool's domain credentials, or undefined when it may: only a
 * host whose SSH host key an admin pinned in spec.hostKey before winfleet connected, and whose
 * session presented exactly that key. A key trusted on first use (status.hostKeyFingerprint,
 * or the winfleet.io/trust-host-key annotation) proves only that the same machine answers
 * again, not which machine it is: whoever answered first (a man in the middle, a machine
 * someone else put at the address) would get the domain account.
 */
export function credentialsRefusal(
  host: WindowsHost,
  presented: string,
  ad: PoolActiveDirectory,
): string | undefined {
  const pinned = host.spec.hostKey;
  const fix = `pin the host's key, read on the host itself (ssh-keygen -lf C:\\ProgramData\\ssh\\ssh_host_ed25519_key.pub) or from your inventory: kubectl patch windowshost -n ${host.metadata.namespace} ${host.metadata.name} --type merge -p '{"spec":{"hostKey":"SHA256:…"}}' (or add it with winfleet hosts add --host-key)`;
  if (pinned === undefined) {
    return `Pool ${ad.pool} joins its hosts to ${ad.spec.domain}, and its domain credentials go only to a host whose SSH host key an admin pinned in spec.hostKey; this host's key (${presented}) was trusted on first use, so nothing was sent and nothing changed on it; ${fix}`;
  }
  if (pinned !== presented) {
    return `The host presented SSH host key ${presented}, not spec.hostKey ${pinned}; no domain credentials were sent`;
  }
  return undefined;
}

/** The decoded `username` and `password` of the pool's credentials Secret. */
export async function readDomainCredentials(
  deps: Pick<HostControllerDeps, 'kc'>,
  ad: PoolActiveDirectory,
): Promise<DomainCredentialsInput> {
  const name = ad.spec.credentialsSecretRef.name;
  const where = `Secret ${ad.namespace}/${name} (pool ${ad.pool}, spec.activeDirectory.credentialsSecretRef)`;
  let secret: k8s.V1Secret;
  try {
    secret = await deps.kc
      .makeApiClient(k8s.CoreV1Api)
      .readNamespacedSecret({ name, namespace: ad.namespace });
  } catch (error) {
    if (isNotFound(error)) {
      throw new WinfleetError(
        'WF_HOST_AD_REFUSED',
        `${where} does not exist; create it with the keys username and password of an account allowed to join computers to ${ad.spec.domain}`,
      );
    }
    throw error;
  }
  // The Secret must name the pool: nothing else of it is read before that.
  const optIn = domainJoinPools(secret.metadata?.annotations?.[domainJoinPoolsAnnotation]);
  if (!optIn.pools.includes(ad.pool)) {
    const listed = [...optIn.pools, ad.pool].join(',');
    throw new WinfleetError(
      'WF_HOST_AD_SECRET_NOT_OPTED_IN',
      `${where} does not opt in to pool ${ad.pool}: ${optIn.problem ?? `its ${domainJoinPoolsAnnotation} lists ${optIn.pools.join(', ')}`}; a pool's credentials Secret must name the pool, so that whoever may create pools cannot have any username/password Secret of the namespace sent to a host; nothing was read from it or sent. If this Secret is the pool's domain account: kubectl annotate secret -n ${ad.namespace} ${name} --overwrite ${domainJoinPoolsAnnotation}=${listed}`,
    );
  }
  const decode = (key: string) => {
    const value = secret.data?.[key];
    return value === undefined ? '' : Buffer.from(value, 'base64').toString('utf8');
  };
  const username = decode('username');
  const password = decode('password');
  const missing = [username ? '' : 'username', password ? '' : 'password'].filter(Boolean);
  if (missing.length > 0) {
    throw new WinfleetError(
      'WF_HOST_AD_REFUSED',
      `${where} has no ${missing.join(' and no ')}; add the key${missing.length > 1 ? 's' : ''} ${missing.join(' and ')}`,
    );
  }
  return { username: qualifiedUsername(username, ad.spec.domain), password };
}

/** The hostname plan for `host`, or a refusal. */
export function adHostnamePlan(
  host: WindowsHost,
  facts: HostFacts,
  ad: PoolActiveDirectory,
): AdHostnamePlan {
  if (ad.problems.length > 0) {
    return {
      action: 'refuse',
      message: `Pool ${ad.pool} has a bad spec.activeDirectory, so its hosts are not joined: ${ad.problems.join('; ')}`,
    };
  }
  return planAdHostname({
    ...(host.spec.nodeName !== undefined ? { nodeName: host.spec.nodeName } : {}),
    hostname: facts.hostname,
    pool: ad.pool,
    uid: host.metadata.uid ?? host.metadata.name,
  });
}

/**
 * The checks that come before anything changes on the host: the hostname plan's refusal, and a
 * host joined to another domain. Returns the hostname the host will have (the node name's
 * source).
 * @package
 */
export function checkActiveDirectory(
  hs: HostStatus,
  facts: HostFacts,
  ad: PoolActiveDirectory,
  plan: AdHostnamePlan,
): string {
  if (plan.action === 'refuse') refuse(hs, plan.message);
  const domain = ad.spec.domain;
  if (facts.partOfDomain && facts.domain?.toLowerCase() !== domain.toLowerCase()) {
    refuse(
      hs,
      `The host is joined to domain ${facts.domain}, not ${domain} (pool ${ad.pool}, spec.activeDirectory.domain); winfleet does not move hosts between domains: remove it from ${facts.domain} (Remove-Computer) or put the WindowsHost in a pool of that domain`,
    );
  }
  if (facts.partOfDomain && plan.action === 'rename') {
    refuse(
      hs,
      `The host is joined to ${domain} as ${facts.hostname}, which cannot be its node name (${plan.reason}); rename it in the domain to a name of at most 15 characters (Rename-Computer -DomainCredential), or set spec.nodeName to its current name if that is valid`,
    );
  }
  return plan.hostname;
}

/** True when the host booted after `at` (or does not say when it booted). */
function bootedAfter(facts: HostFacts, at: string): boolean {
  if (typeof facts.lastBootTime !== 'string') return true;
  const booted = Date.parse(facts.lastBootTime);
  const asked = Date.parse(at);
  return Number.isNaN(booted) || Number.isNaN(asked) || booted > asked;
}

async function restart(
  deps: HostControllerDeps,
  host: WindowsHost,
  hs: HostStatus,
  remote: RemoteHost,
  message: string,
): Promise<'restarting'> {
  await remote.script('restart-host', {});
  hs.status.activeDirectoryRestartAt = apiTime();
  hs.set(ConditionType.Ready, 'False', ConditionReason.JoiningDomain, message);
  deps.events.record(host, 'Normal', EventReason.JoiningDomain, message);
  return 'restarting';
}

/**
 * Does the next step of the domain join (see the header): 'joined' when the join may go on,
 * 'restarting' when the host was asked to restart. `hostname` is checkActiveDirectory's.
 * @package
 */
export async function ensureDomainJoined(
  deps: HostControllerDeps,
  host: WindowsHost,
  hs: HostStatus,
  remote: RemoteHost,
  facts: HostFacts,
  ad: PoolActiveDirectory,
  hostname: string,
): Promise<'joined' | 'restarting'> {
  const { domain } = ad.spec;
  const where = host.spec.address;
  const restartAt = hs.status.activeDirectoryRestartAt;
  if (facts.partOfDomain) {
    // Joined, but not yet restarted since (the restart command was lost): restart again.
    if (restartAt !== undefined && !bootedAfter(facts, restartAt)) {
      return restart(
        deps,
        host,
        hs,
        remote,
        `${where} is joined to ${domain} but has not restarted since; restarting it`,
      );
    }
    return 'joined';
  }
  // Nothing changes on a host that could not be given the credentials (before the rename too).
  const keyRefusal = credentialsRefusal(host, remote.session.fingerprint, ad);
  if (keyRefusal) refuse(hs, keyRefusal, 'WF_HOST_KEY_NOT_PINNED');
  if (facts.hostname.toLowerCase() !== hostname.toLowerCase()) {
    if (facts.pendingHostname?.toLowerCase() !== hostname.toLowerCase()) {
      await runStep(hs, () => remote.script('rename-computer', { newName: hostname }));
    }
    return restart(
      deps,
      host,
      hs,
      remote,
      `Renamed ${where} from ${facts.hostname} to ${hostname} for Active Directory (pool ${ad.pool}); the host restarts, then joins ${domain}`,
    );
  }
  const credentials = await readDomainCredentials(deps, ad).catch((error: unknown) => {
    const code = errorCode(error);
    if (code === 'WF_HOST_AD_REFUSED' || code === 'WF_HOST_AD_SECRET_NOT_OPTED_IN') {
      refuse(hs, (error as Error).message, code);
    }
    throw error;
  });
  try {
    await remote.script(
      'join-domain',
      {
        domain,
        ...(ad.spec.organizationalUnit ? { organizationalUnit: ad.spec.organizationalUnit } : {}),
      },
      { input: credentialsInput(credentials) },
    );
  } catch (error) {
    if (errorCode(error) !== 'WF_REMOTE_COMMAND_FAILED') throw error;
    const message = `Joining ${where} (${hostname}) to domain ${domain} failed with the credentials of Secret ${ad.namespace}/${ad.spec.credentialsSecretRef.name}: ${firstLine(error)}; the host stays in its workgroup and nothing else was done; fix the Secret's username and password (or the domain's reachability), and the join is retried`;
    hs.set(ConditionType.Degraded, 'True', ConditionReason.DomainJoinFailed, message);
    hs.error(JoinStep.ActiveDirectory, message);
    throw new WinfleetError('WF_HOST_DOMAIN_JOIN_FAILED', message, { cause: error });
  }
  return restart(
    deps,
    host,
    hs,
    remote,
    `Joined ${where} (${hostname}) to domain ${domain}${ad.spec.organizationalUnit ? ` in ${ad.spec.organizationalUnit}` : ''}; the host restarts, then joins the cluster`,
  );
}

/** A remote step's failure as status shows it (the JoinStep and the error). */
async function runStep<T>(hs: HostStatus, work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    hs.error(JoinStep.ActiveDirectory, (error as Error).message);
    throw error;
  }
}

/** The message without the "<script> failed (exit 1): " prefix, first line only. */
function firstLine(error: unknown): string {
  return (error as Error).message
    .replace(/^[\w -]+ failed \(exit -?\d+\): /, '')
    .split('\n')[0]!
    .slice(0, 400);
}

/**
 * Takes a host out of its pool's domain as it is deconfigured, without credentials: the
 * `leave-domain` script unjoins it locally (Win32_ComputerSystem.UnjoinDomainOrWorkgroup with no
 * account and no NETSETUP_ACCT_DELETE, which needs no domain controller and no domain account;
 * domain-scripts.ts), then it restarts into workgroup WORKGROUP. A host being removed is often
 * one the admin no longer trusts, so it never gets the domain account: its computer account
 * stays enabled in the domain, and a Warning Event (ComputerAccountLeftEnabled) names it for an
 * AD admin to disable or delete. A host not in the pool's domain is left as it is. Returns
 * whether it left.
 * @package
 */
export async function leaveDomain(
  deps: HostControllerDeps,
  host: WindowsHost,
  remote: RemoteHost,
  ad: PoolActiveDirectory,
): Promise<boolean> {
  const facts = await remote.facts();
  if (!facts.partOfDomain || facts.domain?.toLowerCase() !== ad.spec.domain.toLowerCase()) {
    return false;
  }
  try {
    await remote.script('leave-domain', { domain: ad.spec.domain });
  } catch (error) {
    if (errorCode(error) !== 'WF_REMOTE_COMMAND_FAILED') throw error;
    throw new WinfleetError(
      'WF_HOST_DOMAIN_JOIN_FAILED',
      `Removing ${host.spec.address} (${facts.hostname}) from domain ${ad.spec.domain} locally (no credentials are sent to a host being removed) failed: ${firstLine(error)}; the removal is retried`,
      { cause: error },
    );
  }
  await remote.script('restart-host', {});
  deps.events.record(
    host,
    'Normal',
    EventReason.LeftDomain,
    `Removed ${host.spec.address} (${facts.hostname}) from domain ${ad.spec.domain} locally, without credentials; it restarts in workgroup ${leaveWorkgroup}`,
  );
  const account = `${facts.hostname.slice(0, 15).toUpperCase()}$`;
  deps.events.record(
    host,
    'Warning',
    EventReason.ComputerAccountLeftEnabled,
    `The computer account ${account} of ${facts.hostname} is still enabled in ${ad.spec.domain}: winfleet sends no domain credentials to a host being removed. Disable or delete it as an AD admin: Disable-ADAccount -Identity '${account}' (or Remove-ADComputer -Identity '${facts.hostname.slice(0, 15)}')`,
  );
  return true;
}
