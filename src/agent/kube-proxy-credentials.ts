/**
 * kube-proxy's own client certificate (identity: src/api/kube-proxy-identity.ts). Once the
 * node's credentials work, the agent generates a key on the host, asks the
 * kubernetes.io/kube-apiserver-client signer for a certificate (CN winfleet:kube-proxy:<node>,
 * O winfleet:kube-proxies, usages digital signature and client auth, a bounded lifetime),
 * which the operator approves only for its own hosts, and writes C:\k\kube-proxy.kubeconfig
 * with the CA, the certificate and the key. It asks again once 70% of the certificate's
 * lifetime has passed; kube-proxy keeps the old one until the new one is issued.
 *
 * Services whose arguments name that kubeconfig wait (registered, not started) until it
 * exists, and restart when it is rewritten: kube-proxy reads its credentials only at start.
 * Nothing here throws: a failure is logged and tried again at the next check.
 */
import {
  createHash,
  createPrivateKey,
  createPublicKey,
  type webcrypto,
  X509Certificate,
} from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import * as k8s from '@kubernetes/client-node';
import { parse } from 'yaml';
import {
  kubeProxyGroup,
  kubeProxySignerName,
  kubeProxyUsages,
  kubeProxyUserName,
} from '../api/kube-proxy-identity.ts';
import { WinfleetError } from '../errors/catalog.ts';
import { httpStatus, isAlreadyExists, isNotFound } from '../kube/client.ts';
import {
  createCsrPem,
  generateKeyPair,
  keyPairFromPem,
  privateKeyToPem,
} from '../pki/certificates.ts';
import type { ServicesManifest } from '../servicesmanifest/services-manifest.ts';
import { paths } from './agent-config.ts';
import type { AgentContext } from './agent-context.ts';
import type { HostOS } from './host-os.ts';
import { inlineKubeconfig } from './node-files.ts';

/** The key of a certificate request not yet issued; kept so a restarted agent asks with it again. */
export const kubeProxyPendingKeyPath = `${paths.certDir}\\kube-proxy-client.key.tmp`;

/** Renew once this share of the certificate's lifetime has passed. */
export const kubeProxyRenewalShare = 0.7;

export interface KubeProxyCredentialsOptions {
  /**
   * The lifetime asked for (the CSR's expirationSeconds). Default 7 days. The signer may
   * shorten it (kube-controller-manager's --cluster-signing-duration); the API server refuses
   * less than 600 seconds.
   */
  lifetimeSeconds?: number;
  /** How long one call waits for its request to be approved and signed. Default 15 s. */
  waitMs?: number;
  /** Interval of that wait. Default 250 ms. */
  pollMs?: number;
  /** After a denial, how long until the agent asks again. Default 10 minutes. */
  retryAfterDenialMs?: number;
  /** Each API call's timeout. Default 10 s. */
  apiTimeoutMs?: number;
  /** The clock (tests move it to a renewal time). */
  now?: () => Date;
}

export interface KubeProxyCredentialsOutcome {
  /** Services that use kube-proxy's kubeconfig and must not start: it does not exist yet. */
  holdBack: Set<string>;
  /** Services to restart: their kubeconfig was just written. */
  restart: Set<string>;
}

/** kube-proxy's kubeconfig as the agent writes it: everything inline. */
export interface KubeProxyKubeconfig {
  server: string;
  caPem: string;
  certPem: string;
  keyPem: string;
}

/** Per agent: until when a denied request is not repeated, and why it was denied. */
const deniedUntil = new WeakMap<AgentContext, { until: number; reason: string }>();

/** The services whose arguments name kube-proxy's kubeconfig. */
export function kubeProxyCredentialUsers(manifest: ServicesManifest): string[] {
  const path = paths.kubeProxyKubeconfig.toLowerCase();
  return manifest.services
    .filter((s) =>
      s.args.some(
        (a, i) =>
          a.toLowerCase() === `--kubeconfig=${path}` ||
          (a === '--kubeconfig' && s.args[i + 1]?.toLowerCase() === path),
      ),
    )
    .map((s) => s.name);
}

/** The kubeconfig text for `credentials`. */
export function kubeProxyKubeconfigText(credentials: KubeProxyKubeconfig): string {
  const base64 = (text: string) => Buffer.from(text).toString('base64');
  return inlineKubeconfig({
    server: credentials.server,
    caPem: credentials.caPem,
    userName: 'kube-proxy',
    contextName: 'kube-proxy',
    user: {
      'client-certificate-data': base64(credentials.certPem),
      'client-key-data': base64(credentials.keyPem),
    },
  });
}

/** Reads back what kubeProxyKubeconfigText wrote; throws naming what is missing. */
export function parseKubeProxyKubeconfig(text: string): KubeProxyKubeconfig {
  const document = parse(text) as {
    clusters?: { cluster?: Record<string, string> }[];
    users?: { user?: Record<string, string> }[];
  } | null;
  const cluster = document?.clusters?.[0]?.cluster;
  const user = document?.users?.[0]?.user;
  const field = (entry: Record<string, string> | undefined, key: string, decode: boolean) => {
    const value = entry?.[key];
    if (!value) {
      throw new WinfleetError(
        'WF_KUBE_PROXY_CERTIFICATE',
        `${paths.kubeProxyKubeconfig} has no ${key}; the agent rewrites it at its next check`,
      );
    }
    return decode ? Buffer.from(value, 'base64').toString('utf8') : value;
  };
  return {
    server: field(cluster, 'server', false),
    caPem: field(cluster, 'certificate-authority-data', true),
    certPem: field(user, 'client-certificate-data', true),
    keyPem: field(user, 'client-key-data', true),
  };
}

/** When 70% of the certificate's lifetime has passed. */
export function renewalTime(certificate: X509Certificate): Date {
  const from = new Date(certificate.validFrom).getTime();
  const to = new Date(certificate.validTo).getTime();
  return new Date(from + (to - from) * kubeProxyRenewalShare);
}

/**
 * Why `current` must be replaced for node `nodeName` at `now` against the cluster the node
 * talks to, or undefined while it is good.
 * @package
 */
export function replacementReason(
  current: KubeProxyKubeconfig,
  expected: { nodeName: string; server: string; caPem: string },
  now: Date,
): string | undefined {
  const problem = issuedProblem(current.certPem, current.keyPem, expected.nodeName);
  if (problem) return problem;
  const certificate = new X509Certificate(current.certPem);
  if (current.server !== expected.server) {
    return `it names API server ${current.server}, the node uses ${expected.server}`;
  }
  if (current.caPem.trim() !== expected.caPem.trim()) {
    return 'its cluster CA differs from the one the node uses';
  }
  const renewAt = renewalTime(certificate);
  if (now >= renewAt) {
    return `70% of its certificate's lifetime has passed (renewal due ${renewAt.toISOString()}, expiry ${new Date(certificate.validTo).toISOString()})`;
  }
  return undefined;
}

/** Per-call bounds for the API client: abort after `timeoutMs`. */
function bounded(timeoutMs: number): k8s.ConfigurationOptions {
  const middleware: k8s.ObservableMiddleware = {
    pre: (context) => {
      context.setSignal(AbortSignal.timeout(timeoutMs));
      return new k8s.Observable(Promise.resolve(context));
    },
    post: (context) => new k8s.Observable(Promise.resolve(context)),
  };
  return { middleware: [middleware], middlewareMergeStrategy: 'append' };
}

/** The pending key, or a new one saved first (so a restarted agent asks with the same key). */
async function pendingKey(
  host: HostOS,
): Promise<{ keys: webcrypto.CryptoKeyPair; keyPem: string }> {
  const saved = await host.readFile(kubeProxyPendingKeyPath);
  if (saved) {
    try {
      const keyPem = saved.toString('utf8');
      return { keys: await keyPairFromPem(keyPem), keyPem };
    } catch {
      // Unreadable (a partial write before a crash): a new key replaces it.
    }
  }
  const keys = await generateKeyPair();
  const keyPem = await privateKeyToPem(keys.privateKey);
  await host.writeFile(kubeProxyPendingKeyPath, keyPem);
  return { keys, keyPem };
}

/** The CSR's name: derived from the key, so the same key always names the same request. */
function requestName(nodeName: string, keyPem: string): string {
  const spki = createPublicKey(keyPem).export({ type: 'spki', format: 'der' });
  const digest = createHash('sha256').update(spki).digest('hex').slice(0, 16);
  return `winfleet-kube-proxy-${nodeName}-${digest}`;
}

/**
 * Why a certificate is not kube-proxy's for node `nodeName` with key `keyPem`, or undefined
 * when it is: for one just issued and for the one in the kubeconfig alike.
 */
function issuedProblem(certPem: string, keyPem: string, nodeName: string): string | undefined {
  let certificate: X509Certificate;
  try {
    certificate = new X509Certificate(certPem);
  } catch (error) {
    return `its certificate cannot be read (${(error as Error).message})`;
  }
  const user = kubeProxyUserName(nodeName);
  if (!certificate.subject.split('\n').includes(`CN=${user}`)) {
    return `its certificate is not for ${user} (subject ${certificate.subject.replaceAll('\n', ', ')})`;
  }
  let keyMatches: boolean;
  try {
    keyMatches = certificate.checkPrivateKey(createPrivateKey(keyPem));
  } catch {
    keyMatches = false;
  }
  return keyMatches ? undefined : 'its key is not the key of its certificate';
}

/**
 * Makes sure kube-proxy has its own credentials (see the module comment). `nodeKc` is the
 * node's client once its credentials work (undefined before: nothing is requested then).
 * Returns which services wait for the kubeconfig and which must restart with a new one.
 */
export async function ensureKubeProxyCredentials(
  context: AgentContext,
  manifest: ServicesManifest,
  nodeName: string,
  nodeKc: k8s.KubeConfig | undefined,
  options: KubeProxyCredentialsOptions = {},
): Promise<KubeProxyCredentialsOutcome> {
  const users = kubeProxyCredentialUsers(manifest);
  const outcome: KubeProxyCredentialsOutcome = { holdBack: new Set(), restart: new Set() };
  if (users.length === 0) return outcome;
  const host = context.hostOS;
  const log = (line: string) => context.stderr(`kube-proxy credentials: ${line}\n`);
  const now = (options.now ?? (() => new Date()))();
  const existing = await host.readFile(paths.kubeProxyKubeconfig);
  let current: KubeProxyKubeconfig | undefined;
  let why = `${paths.kubeProxyKubeconfig} does not exist`;
  if (existing) {
    try {
      current = parseKubeProxyKubeconfig(existing.toString('utf8'));
    } catch (error) {
      why = (error as Error).message;
    }
  }
  const cluster = nodeKc?.getCurrentCluster();
  if (nodeKc && cluster?.caData) {
    const expected = {
      nodeName,
      server: cluster.server,
      caPem: Buffer.from(cluster.caData, 'base64').toString('utf8'),
    };
    const reason = current ? replacementReason(current, expected, now) : why;
    if (reason) {
      try {
        const issued = await requestCertificate(context, nodeKc, nodeName, reason, log, options);
        if (issued) {
          await host.writeFile(
            paths.kubeProxyKubeconfig,
            kubeProxyKubeconfigText({ ...expected, ...issued }),
          );
          await host.removePath(kubeProxyPendingKeyPath);
          const validTo = new Date(new X509Certificate(issued.certPem).validTo);
          log(
            `certificate issued, valid until ${validTo.toISOString()}; wrote ${paths.kubeProxyKubeconfig} and restarting ${users.join(', ')}`,
          );
          for (const name of users) outcome.restart.add(name);
          return outcome;
        }
      } catch (error) {
        log(`${(error as Error).message}; trying again at the next check`);
      }
    }
  }
  if (!existing) for (const name of users) outcome.holdBack.add(name);
  return outcome;
}

/** One certificate request as it is made and watched: the API, its name and the pending key. */
interface CsrAttempt {
  context: AgentContext;
  api: k8s.CertificatesV1Api;
  call: k8s.ConfigurationOptions;
  /** The CSR's name (requestName: the node and the key). */
  name: string;
  nodeName: string;
  keyPem: string;
  log: (line: string) => void;
  options: KubeProxyCredentialsOptions;
}

/**
 * Creates (or finds) the certificate request for the pending key and waits a little for its
 * certificate. Returns it with its key, or undefined while it is pending or after a denial.
 */
async function requestCertificate(
  context: AgentContext,
  kc: k8s.KubeConfig,
  nodeName: string,
  reason: string,
  log: (line: string) => void,
  options: KubeProxyCredentialsOptions,
): Promise<{ certPem: string; keyPem: string } | undefined> {
  const denied = deniedUntil.get(context);
  if (denied && Date.now() < denied.until) return undefined;
  const api = kc.makeApiClient(k8s.CertificatesV1Api);
  const call = bounded(options.apiTimeoutMs ?? 10_000);
  const { keys, keyPem } = await pendingKey(context.hostOS);
  const name = requestName(nodeName, keyPem);
  const attempt: CsrAttempt = { context, api, call, name, nodeName, keyPem, log, options };
  const csr = (await readRequest(attempt)) ?? (await createRequest(attempt, keys, reason));
  return awaitCertificate(attempt, csr);
}

/** The CSR of this attempt, undefined when there is none. */
async function readRequest(
  attempt: CsrAttempt,
): Promise<k8s.V1CertificateSigningRequest | undefined> {
  try {
    return await attempt.api.readCertificateSigningRequest({ name: attempt.name }, attempt.call);
  } catch (error) {
    if (isNotFound(error)) return undefined;
    throw error;
  }
}

/** Creates the CSR for the pending key; undefined when one of that name appeared meanwhile. */
async function createRequest(
  attempt: CsrAttempt,
  keys: Awaited<ReturnType<typeof pendingKey>>['keys'],
  reason: string,
): Promise<k8s.V1CertificateSigningRequest | undefined> {
  const { api, call, name, nodeName, options } = attempt;
  const request = await createCsrPem(
    { commonName: kubeProxyUserName(nodeName), organizations: [kubeProxyGroup] },
    keys,
  );
  try {
    const csr = await api.createCertificateSigningRequest(
      {
        body: {
          metadata: { name },
          spec: {
            request: Buffer.from(request).toString('base64'),
            signerName: kubeProxySignerName,
            usages: [...kubeProxyUsages],
            expirationSeconds: options.lifetimeSeconds ?? 7 * 24 * 3600,
          },
        },
      },
      call,
    );
    attempt.log(
      `requested a client certificate (CSR ${name}, signer ${kubeProxySignerName}, CN ${kubeProxyUserName(nodeName)}): ${reason}`,
    );
    return csr;
  } catch (error) {
    if (!isAlreadyExists(error)) {
      throw new WinfleetError(
        'WF_KUBE_PROXY_CERTIFICATE',
        `cannot create CSR ${name} with the node's credentials (HTTP ${httpStatus(error) ?? 'error'}: ${(error as Error).message}); check the API server's --authorization-mode includes Node`,
      );
    }
    return undefined;
  }
}

/**
 * Polls the CSR until it is denied (undefined, asked again later with a new key), issued (the
 * certificate, checked against the key) or the wait ends (undefined).
 */
async function awaitCertificate(
  attempt: CsrAttempt,
  first: k8s.V1CertificateSigningRequest | undefined,
): Promise<{ certPem: string; keyPem: string } | undefined> {
  const { context, name, options } = attempt;
  const host = context.hostOS;
  let csr = first;
  const deadline = Date.now() + (options.waitMs ?? 15_000);
  for (;;) {
    const refused = csr?.status?.conditions?.find(
      (c) => c.type === 'Denied' || c.type === 'Failed',
    );
    if (refused) {
      const retryMs = options.retryAfterDenialMs ?? 10 * 60_000;
      deniedUntil.set(context, { until: Date.now() + retryMs, reason: refused.message ?? '' });
      await host.removePath(kubeProxyPendingKeyPath);
      attempt.log(
        `CSR ${name} was ${refused.type.toLowerCase()} (${refused.reason ?? 'no reason'}: ${refused.message ?? ''}); asking again with a new key in ${Math.round(retryMs / 1000)} s. The winfleet operator approves it only for a node of a WindowsHost it manages: check the WindowsHost's conditions and the operator's log`,
      );
      return undefined;
    }
    const certificate = csr?.status?.certificate;
    if (certificate) return acceptIssued(attempt, certificate);
    if (Date.now() >= deadline || context.signal?.aborted) return undefined;
    await sleep(options.pollMs ?? 250, undefined, { signal: context.signal }).catch(() => {});
    csr = await readRequest(attempt);
    if (!csr) return undefined;
  }
}

/** The issued certificate with its key, once it is checked to be the node's kube-proxy's. */
async function acceptIssued(
  attempt: CsrAttempt,
  certificate: string,
): Promise<{ certPem: string; keyPem: string }> {
  const { context, name, keyPem } = attempt;
  const certPem = Buffer.from(certificate, 'base64').toString('utf8');
  const problem = issuedProblem(certPem, keyPem, attempt.nodeName);
  if (problem) {
    await context.hostOS.removePath(kubeProxyPendingKeyPath);
    throw new WinfleetError(
      'WF_KUBE_PROXY_CERTIFICATE',
      `the certificate issued for CSR ${name} is refused: ${problem}; check kube-controller-manager's --cluster-signing-* flags (the signer of ${kubeProxySignerName} must sign with the cluster CA) and the CSR's status (kubectl get csr ${name} -o yaml)`,
    );
  }
  deniedUntil.delete(context);
  return { certPem, keyPem };
}
