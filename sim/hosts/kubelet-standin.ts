/**
 * The kubelet stand-in: what kubelet.exe does on a simulated host, against the real API
 * server, so a wrong kubelet configuration produces a wrong (or no) Node:
 * 1. reads its flags (the service's command line) and its KubeletConfiguration, and stops with
 *    the kubelet's own error for what a real kubelet refuses on Windows;
 * 2. uses C:\k\kubeconfig when it holds a valid client certificate; otherwise does the TLS
 *    bootstrap: a CSR for CN=system:node:<name>, O=system:nodes (signer
 *    kubernetes.io/kube-apiserver-client-kubelet) made with the bootstrap token, waits for its
 *    approval and the controller manager's signature, and writes the certificate and a
 *    kubeconfig that uses it;
 * 3. as the node (NodeRestriction applies) registers its Node: default labels (os, arch,
 *    hostname, windows-build) plus --node-labels and the registerWithTaints taints at
 *    creation (as the real kubelet, it never changes taints or --node-labels of an existing
 *    Node), nodeInfo with the machine's boot id, addresses, capacity and allocatable;
 * 4. asks for a serving certificate (signer kubernetes.io/kubelet-serving) without waiting;
 * 5. renews its node Lease while it runs (node-lease.ts), so the lease lapses when it stops,
 *    crashes or the machine reboots, as with a dead kubelet;
 * 6. posts its Node's status conditions itself, as the kubelet does (node-status.ts): Ready
 *    while its container runtime (a running containerd.exe behind
 *    npipe://./pipe/containerd-containerd) is up and has a pod network (a CNI config it can
 *    load, sim-cni.ts), else Ready=False with the kubelet's message; and hands its pods'
 *    containers to kwok (annotation kwok.x-k8s.io/node=winfleet-host) only while it is Ready.
 *    kwok never writes the Node's status: a host whose kubelet falls silent (a frozen process)
 *    is marked Unknown by kube-controller-manager's node lifecycle controller, as on a real
 *    cluster;
 * 7. sets up each of its pods' sandbox: an address from the CNI config, set as the pod's podIP
 *    (pod-sandboxes.ts), before kwok runs its containers;
 * 8. writes each running container's CRI log file (container-logs.ts) and serves the kubelet
 *    API on port 10250 behind the host's firewall (kubelet-server.ts): `kubectl logs` reads
 *    them through the API server.
 * Every API call is bounded and retried; nothing escapes the program unhandled.
 */
import {
  createHash,
  createPrivateKey,
  createPublicKey,
  randomUUID,
  type webcrypto,
  X509Certificate,
} from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import * as k8s from '@kubernetes/client-node';
import { httpStatus, isAlreadyExists, isNotFound } from '../../src/kube/client.ts';
import {
  createCsrPem,
  generateKeyPair,
  keyPairFromPem,
  privateKeyToPem,
} from '../../src/pki/certificates.ts';
import { windowsBuildLabel } from '../../src/windows/builds.ts';
import { hostNodeAnnotation } from '../cluster/start-cluster.ts';
import { ContainerLogWriter } from './container-logs.ts';
import { parentOf } from './file-system.ts';
import { errorCode } from './file-system-error.ts';
import {
  callOptions,
  type KubeCredentials,
  kubeConfigFor,
  nodeKubeconfig,
  readKubeconfig,
} from './kubelet-kubeconfig.ts';
import { startKubeletServer } from './kubelet-server.ts';
import {
  containerdEndpoint,
  type KubeletSettings,
  kubeletSettings,
  parseKubeletConfiguration,
} from './kubelet-settings.ts';
import type { SimMachine } from './machine.ts';
import { renewNodeLease } from './node-lease.ts';
import { nodePodInformer } from './node-pods.ts';
import { nodeResources } from './node-resources.ts';
import {
  type KubeletReadiness,
  kubeletConditions,
  kubeletConditionsChanged,
  nodeStatusReportFrequencyMs,
  nodeStatusUpdateFrequencyMs,
} from './node-status.ts';
import { networkNotReadyMessage, PodSandboxes } from './pod-sandboxes.ts';
import { type RuntimeNetwork, runtimeNetwork } from './sim-cni.ts';
import type { ProgramContext, SimProgram } from './sim-process.ts';
import { readStandIn, standInHeadBytes } from './stand-in-binary.ts';
import { formatWindowsPath, windowsPathSegments } from './windows-path.ts';

/** The kubelet's error for an empty --config file (Go's %q quoting of the path). */
export function emptyKubeletConfigMessage(path: string): string {
  return `failed to load kubelet config file, path: ${path}, error: failed to load Kubelet config file ${path}, error kubelet config file ${JSON.stringify(path)} was empty`;
}

export interface KubeletStandInOptions {
  /** Each API call's timeout. Default 10 s. */
  apiTimeoutMs?: number;
  /** How long the TLS bootstrap waits for its certificate before the kubelet exits. Default 15 min. */
  bootstrapTimeoutMs?: number;
  /** How long registration is retried before the kubelet exits. Default 5 min. */
  registrationTimeoutMs?: number;
  /** How long the serving CSR is watched. Default 10 min. */
  servingCsrTimeoutMs?: number;
  /** Poll interval for CSRs and the container runtime. Default 500 ms. */
  pollMs?: number;
  /** Hand the node to kwok only while containerd runs (default true). */
  requireContainerRuntime?: boolean;
  /** kubeletVersion when the executable is not a stand-in. Default v1.36.5. */
  defaultVersion?: string;
}

export const clientSignerName = 'kubernetes.io/kube-apiserver-client-kubelet';
export const servingSignerName = 'kubernetes.io/kubelet-serving';
const attachDetachAnnotation = 'volumes.kubernetes.io/controller-managed-attach-detach';
const clientCertificateFile = 'kubelet-client-current.pem';

/**
 * Where the kubelet keeps its client certificate given its --cert-dir: kubelet-client-current.pem
 * in that directory (client-go util/certificate/certificate_store.go fileStore.filename, with
 * the kubelet's pair prefix "kubelet-client"; the real kubelet makes it a symlink to the dated
 * file, read through the same name).
 */
export function kubeletClientCertificateFile(certDir: string): string {
  return formatWindowsPath([...windowsPathSegments(certDir), clientCertificateFile]);
}
const bootstrapKeyFile = 'kubelet-client.key.tmp';
const servingCertificateFile = 'kubelet-server-current.pem';

/** Per machine: the Node the last kubelet run registered, and its pending release. */
interface KubeletNodeLink {
  release: Promise<void>;
  systemUuid: string;
  /** HKLM\SOFTWARE\Microsoft\Cryptography\MachineGuid, which the kubelet reports. */
  machineGuid: string;
}

/** The kubelet program with default options (what defaultPrograms() registers). */
export const kubeletStandIn: SimProgram = (context) => createKubeletStandIn()(context);

/** A kubelet program with the given options. */
export function createKubeletStandIn(options: KubeletStandInOptions = {}): SimProgram {
  const settings = {
    apiTimeoutMs: options.apiTimeoutMs ?? 10_000,
    bootstrapTimeoutMs: options.bootstrapTimeoutMs ?? 15 * 60_000,
    registrationTimeoutMs: options.registrationTimeoutMs ?? 5 * 60_000,
    servingCsrTimeoutMs: options.servingCsrTimeoutMs ?? 10 * 60_000,
    pollMs: options.pollMs ?? 500,
    requireContainerRuntime: options.requireContainerRuntime ?? true,
    defaultVersion: options.defaultVersion ?? 'v1.36.5',
  };
  return async function kubelet(context: ProgramContext): Promise<number> {
    const run = new KubeletRun(context, settings);
    return run.main();
  };
}

type Settings = Required<KubeletStandInOptions>;

class KubeletRun {
  readonly #context: ProgramContext;
  readonly #options: Settings;
  readonly #machine: SimMachine;
  readonly #link: KubeletNodeLink;
  #settings!: KubeletSettings;
  #nodeName = '';
  #core?: k8s.CoreV1Api;
  #handedToKwok = false;
  #pods: PodSandboxes | undefined;
  /** The runtime's pod network at the last look (sim-cni.ts); undefined while it is down. */
  #network: RuntimeNetwork | undefined;
  /** When the Node's status was last looked at and last posted, and the readiness then. */
  #statusCheckedAt = 0;
  #statusPostedAt = 0;
  #statusReadiness: string | undefined;

  /** Aborted when this run ends, however it ends: the loops it started stop with the process. */
  readonly #ended = new AbortController();
  readonly #runSignal: AbortSignal;

  constructor(context: ProgramContext, options: Settings) {
    this.#context = context;
    this.#runSignal = AbortSignal.any([context.signal, this.#ended.signal]);
    this.#options = options;
    this.#machine = context.machine;
    this.#link = context.machine.state<KubeletNodeLink>('kubelet-node-link', () => ({
      release: Promise.resolve(),
      systemUuid: randomUUID().toUpperCase(),
      machineGuid: randomUUID(),
    }));
  }

  #log(severity: 'I' | 'W' | 'E', message: string): void {
    const now = new Date();
    const stamp = `${String(now.getMonth() + 1).padStart(2, '0')}${String(now.getDate()).padStart(2, '0')} ${now.toISOString().slice(11, 23)}`;
    const line = `${severity}${stamp} ${String(this.#context.pid).padStart(7)} kubelet.go] ${message}\n`;
    if (severity === 'I') this.#context.stdout(line);
    else this.#context.stderr(line);
  }

  get #signal(): AbortSignal {
    return this.#runSignal;
  }

  async main(): Promise<number> {
    try {
      await this.#link.release;
      this.#settings = await this.#loadSettings();
      this.#nodeName = (this.#settings.hostnameOverride ?? this.#machine.hostname).toLowerCase();
      this.#log('I', `Starting kubelet ${this.#version()} for node "${this.#nodeName}"`);
      const credentials = await this.#clientCredentials();
      const kc = kubeConfigFor(credentials);
      this.#core = kc.makeApiClient(k8s.CoreV1Api);
      await this.#register();
      // One watch on the node's pods, as the node, for its sandboxes and its containers' logs.
      const log = (severity: 'I' | 'W' | 'E', message: string) => this.#log(severity, message);
      const podInformer = nodePodInformer({
        kc,
        nodeName: this.#nodeName,
        signal: this.#signal,
        log,
      });
      // Pod sandboxes and their IPs (pod-sandboxes.ts).
      const pods = new PodSandboxes({
        machine: this.#machine,
        kc,
        pods: podInformer,
        nodeName: this.#nodeName,
        nodeIP: this.#settings.nodeIp ?? this.#machine.address,
        signal: this.#signal,
        apiTimeoutMs: this.#options.apiTimeoutMs,
        retryMs: Math.max(this.#options.pollMs * 4, 1000),
        log: (severity, message) => this.#log(severity, message),
        network: () => this.#network,
      });
      this.#pods = pods;
      pods.start();
      // The containers' log files, and the kubelet API on its port (kubelet-server.ts).
      new ContainerLogWriter({
        machine: this.#machine,
        pods: podInformer,
        signal: this.#signal,
        log,
      });
      void podInformer.start();
      const node = { machine: this.#machine, kc, nodeName: this.#nodeName, signal: this.#signal };
      await startKubeletServer({ ...node, settings: this.#settings, log });
      // The node's heartbeat (node-lease.ts) while this kubelet runs.
      const lease = renewNodeLease({
        kc,
        nodeName: this.#nodeName,
        signal: this.#signal,
        apiTimeoutMs: this.#options.apiTimeoutMs,
        log: (severity, message) => this.#log(severity, message),
      });
      const serving = this.#settings.serverTLSBootstrap
        ? this.#servingCertificate(credentials).catch((error: unknown) => {
            if (!this.#signal.aborted) {
              this.#log('W', `Serving certificate not obtained: ${(error as Error).message}`);
            }
          })
        : Promise.resolve();
      await this.#superviseRuntime();
      await serving;
      await pods.stopped();
      await lease;
      this.#log('I', 'Kubelet stopped');
      return 0;
    } catch (error) {
      if (this.#signal.aborted) return 0;
      this.#log('E', `${(error as Error).message}`);
      return 1;
    } finally {
      this.#ended.abort();
      if (this.#core) this.#link.release = this.#release(this.#core);
    }
  }

  // 1. Settings.

  async #loadSettings(): Promise<KubeletSettings> {
    const argv = this.#context.argv;
    const configFlag = argv
      .map((a, i) =>
        a.startsWith('--config=') ? a.slice(9) : a === '--config' ? argv[i + 1] : undefined,
      )
      .find((v) => v !== undefined);
    let configFile: ReturnType<typeof parseKubeletConfiguration> | undefined;
    if (configFlag !== undefined) {
      const text = await this.#machine.fs.tryReadFile(configFlag);
      if (text === undefined) {
        throw new Error(
          `failed to load kubelet config file, path: ${configFlag}: open ${configFlag}: The system cannot find the file specified.`,
        );
      }
      // cmd/kubelet/app/server.go (loadConfigFile) around pkg/kubelet/kubeletconfig/configfiles
      // (fsLoader.Load), v1.36: an empty file is refused before decoding.
      if (text.length === 0) throw new Error(emptyKubeletConfigMessage(configFlag));
      configFile = parseKubeletConfiguration(text.toString('utf8'), configFlag);
    }
    const settings = kubeletSettings(argv, configFile);
    for (const warning of settings.flagWarnings) this.#log('W', warning);
    if (!settings.kubeconfigPath) {
      throw new Error(
        'No --kubeconfig given: the kubelet would run standalone and never register a Node; pass --kubeconfig (and --bootstrap-kubeconfig for the TLS bootstrap)',
      );
    }
    if (settings.clientCAFile && !(await this.#machine.fs.stat(settings.clientCAFile))) {
      throw new Error(
        `unable to load client CA file ${settings.clientCAFile}: open ${settings.clientCAFile}: The system cannot find the file specified.`,
      );
    }
    return settings;
  }

  #version(): string {
    return readStandIn(this.#context.binary)?.version ?? this.#options.defaultVersion;
  }

  // 2. Client certificate.

  async #clientCredentials(): Promise<KubeCredentials> {
    const kubeconfigPath = this.#settings.kubeconfigPath!;
    if (await this.#machine.fs.stat(kubeconfigPath)) {
      try {
        const credentials = await readKubeconfig(this.#machine.fs, kubeconfigPath);
        if (
          credentials.certPem &&
          credentials.keyPem &&
          certificateUsable(credentials.certPem, credentials.keyPem)
        ) {
          this.#log('I', `Using the client certificate in ${kubeconfigPath}`);
          return credentials;
        }
        this.#log(
          'W',
          `The client certificate in ${kubeconfigPath} is missing or expired; bootstrapping`,
        );
      } catch (error) {
        this.#log('W', `Cannot use ${kubeconfigPath} (${(error as Error).message}); bootstrapping`);
      }
    }
    return this.#bootstrap();
  }

  async #bootstrap(): Promise<KubeCredentials> {
    const path = this.#settings.bootstrapKubeconfigPath;
    if (!path) {
      throw new Error(
        `unable to load client certificate: ${this.#settings.kubeconfigPath} has none and no --bootstrap-kubeconfig was given`,
      );
    }
    let bootstrap: KubeCredentials;
    try {
      bootstrap = await readKubeconfig(this.#machine.fs, path);
    } catch (error) {
      if (errorCode(error) === 'ENOENT') {
        throw new Error(
          `unable to load bootstrap kubeconfig: stat ${path}: The system cannot find the file specified.`,
        );
      }
      throw error;
    }
    // As the kubelet: the key survives restarts (kubelet-client.key.tmp) and names the CSR,
    // so a kubelet restarted during its bootstrap waits on the same CSR instead of a new one.
    const certDir = windowsPathSegments(this.#settings.certDir);
    const keyFile = formatWindowsPath([...certDir, bootstrapKeyFile]);
    const { keys, keyPem } = await this.#bootstrapKey(keyFile);
    const subject = {
      commonName: `system:node:${this.#nodeName}`,
      organizations: ['system:nodes'],
    };
    const usages = ['digital signature', 'key encipherment', 'client auth'];
    const request = await createCsrPem(subject, keys);
    const certificates = kubeConfigFor(bootstrap).makeApiClient(k8s.CertificatesV1Api);
    const certificate = await this.#requestCertificate(certificates, {
      name: csrName(keyPem, subject.commonName, subject.organizations, usages),
      request,
      signerName: clientSignerName,
      usages,
      timeoutMs: this.#options.bootstrapTimeoutMs,
      what: 'client certificate',
    });
    const file = kubeletClientCertificateFile(this.#settings.certDir);
    await this.#machine.fs.writeFileAtomic(file, `${certificate}${keyPem}`);
    await this.#machine.fs.remove(keyFile, { missingOk: true });
    const kubeconfigPath = this.#settings.kubeconfigPath!;
    await this.#machine.fs.mkdir(parentOf(kubeconfigPath), { recursive: true });
    await this.#machine.fs.writeFileAtomic(kubeconfigPath, nodeKubeconfig(bootstrap, file));
    this.#log(
      'I',
      `Client certificate written to ${file}; kubeconfig written to ${kubeconfigPath}`,
    );
    const credentials: KubeCredentials = { ...bootstrap, certPem: certificate, keyPem };
    delete credentials.token;
    return credentials;
  }

  /** The bootstrap key kept from an earlier attempt, or a new one (saved first). */
  async #bootstrapKey(file: string): Promise<{ keys: webcrypto.CryptoKeyPair; keyPem: string }> {
    const saved = await this.#machine.fs.tryReadFile(file);
    if (saved) {
      try {
        const keyPem = saved.toString('utf8');
        return { keys: await keyPairFromPem(keyPem), keyPem };
      } catch {
        this.#log('W', `Ignoring unreadable bootstrap key ${file}; generating a new one`);
      }
    }
    const keys = await generateKeyPair();
    const keyPem = await privateKeyToPem(keys.privateKey);
    await this.#machine.fs.writeFileAtomic(file, keyPem);
    return { keys, keyPem };
  }

  /**
   * Creates a CSR (named `name`, else generated) and waits for its certificate; an existing
   * CSR of that name is waited on. Retries API errors until `timeoutMs`.
   */
  async #requestCertificate(
    api: k8s.CertificatesV1Api,
    request: {
      name?: string;
      request: string;
      signerName: string;
      usages: string[];
      timeoutMs: number;
      what: string;
    },
  ): Promise<string> {
    const deadline = Date.now() + request.timeoutMs;
    const name = await this.#retry(`create the ${request.what} CSR`, deadline, async () => {
      try {
        const created = await api.createCertificateSigningRequest(
          {
            body: {
              metadata: request.name ? { name: request.name } : { generateName: 'csr-' },
              spec: {
                request: Buffer.from(request.request).toString('base64'),
                signerName: request.signerName,
                usages: request.usages,
              },
            },
          },
          this.#call(),
        );
        return created.metadata!.name!;
      } catch (error) {
        if (request.name && isAlreadyExists(error)) return request.name;
        throw error;
      }
    });
    this.#log('I', `Waiting for the ${request.what}: CSR ${name} (signer ${request.signerName})`);
    for (;;) {
      const csr = await this.#retry(`read CSR ${name}`, deadline, () =>
        api.readCertificateSigningRequest({ name }, this.#call()),
      );
      const refused = csr.status?.conditions?.find(
        (c) => c.type === 'Denied' || c.type === 'Failed',
      );
      if (refused) {
        throw new Error(
          `The ${request.what} request ${name} was ${refused.type.toLowerCase()}: ${refused.reason ?? ''} ${refused.message ?? ''}`.trim(),
        );
      }
      if (csr.status?.certificate) {
        return Buffer.from(csr.status.certificate, 'base64').toString('utf8');
      }
      if (Date.now() >= deadline) {
        throw new Error(
          `Timed out after ${request.timeoutMs} ms waiting for the ${request.what} (CSR ${name} not approved and signed)`,
        );
      }
      await sleep(this.#options.pollMs, undefined, { signal: this.#signal });
    }
  }

  // 3. Registration.

  #nodeObject(): k8s.V1Node {
    const { osVersion } = this.#machine;
    const labels: Record<string, string> = {
      ...this.#settings.nodeLabels,
      ...this.#defaultLabels(),
    };
    const annotations: Record<string, string> = { [attachDetachAnnotation]: 'true' };
    if (this.#readyForPods()) annotations[hostNodeAnnotation.key] = hostNodeAnnotation.value;
    return {
      apiVersion: 'v1',
      kind: 'Node',
      metadata: { name: this.#nodeName, labels, annotations },
      spec: { taints: this.#settings.registerWithTaints.map((t) => ({ ...t })) },
      status: this.#nodeStatus(osVersion.productName),
    };
  }

  #defaultLabels(): Record<string, string> {
    const { osVersion } = this.#machine;
    return {
      'kubernetes.io/os': 'windows',
      'kubernetes.io/arch': 'amd64',
      'kubernetes.io/hostname': this.#nodeName,
      [windowsBuildLabel]: `${osVersion.major}.${osVersion.minor}.${osVersion.build}`,
    };
  }

  #nodeStatus(osImage: string): k8s.V1NodeStatus {
    const resources = nodeResources(
      {
        cpus: this.#machine.cpus,
        memoryBytes: this.#machine.memoryBytes,
        diskBytes: this.#machine.fs.diskSizeBytes,
        maxPods: this.#settings.maxPods,
      },
      [this.#settings.systemReserved, this.#settings.kubeReserved],
    );
    const addresses: k8s.V1NodeAddress[] = [
      { type: 'InternalIP', address: this.#settings.nodeIp ?? this.#machine.address },
      { type: 'Hostname', address: this.#nodeName },
    ];
    return {
      addresses,
      capacity: resources.capacity,
      allocatable: resources.allocatable,
      daemonEndpoints: { kubeletEndpoint: { Port: 10250 } },
      nodeInfo: {
        architecture: 'amd64',
        operatingSystem: 'windows',
        kernelVersion: this.#machine.kernelVersion,
        osImage,
        containerRuntimeVersion: this.#containerRuntimeVersion(),
        kubeletVersion: this.#version(),
        kubeProxyVersion: '',
        bootID: this.#machine.bootId,
        machineID: this.#link.machineGuid,
        systemUUID: this.#link.systemUuid,
      },
    };
  }

  #containerRuntimeVersion(): string {
    const containerd = this.#machine.processes().find((p) => p.imageName === 'containerd.exe');
    const version = containerd && this.#containerdVersion.get(containerd.binaryPath);
    return `containerd://${(version ?? 'v2.1.4').replace(/^v/, '')}`;
  }

  readonly #containerdVersion = new Map<string, string>();

  async #learnContainerdVersion(): Promise<void> {
    for (const process of this.#machine.processes()) {
      if (process.imageName !== 'containerd.exe') continue;
      const binary = await this.#machine.fs
        .readHead(process.binaryPath, standInHeadBytes)
        .catch(() => undefined);
      const version = binary && readStandIn(binary)?.version;
      if (version) this.#containerdVersion.set(process.binaryPath, version);
    }
  }

  /**
   * Whether the node takes pods: its container runtime answers and has a pod network (a CNI
   * config it can load), which the kubelet's Ready condition needs too.
   */
  #readyForPods(): boolean {
    if (!this.#options.requireContainerRuntime) return true;
    return this.#runtimeReady() && this.#network?.status.ready === true;
  }

  /** Looks at the runtime's pod network again; tells the pod sandboxes when it changed. */
  async #refreshNetwork(): Promise<void> {
    const before = this.#network?.status.ready;
    this.#network = this.#runtimeReady() ? await runtimeNetwork(this.#machine) : undefined;
    if (this.#network?.status.ready !== before) this.#pods?.nudge();
  }

  /** Whether the container runtime the kubelet is configured for answers. */
  #runtimeReady(): boolean {
    if (!this.#options.requireContainerRuntime) return true;
    if (this.#settings.containerRuntimeEndpoint !== containerdEndpoint) return false;
    return this.#machine.processes().some((p) => p.imageName === 'containerd.exe' && p.alive);
  }

  async #register(): Promise<void> {
    const core = this.#core!;
    const deadline = Date.now() + this.#options.registrationTimeoutMs;
    await this.#learnContainerdVersion();
    await this.#refreshNetwork();
    const node = this.#nodeObject();
    this.#handedToKwok = hostNodeAnnotation.key in (node.metadata?.annotations ?? {});
    const created = await this.#retry(`register node "${this.#nodeName}"`, deadline, async () => {
      try {
        await core.createNode({ body: node }, this.#call());
        return true;
      } catch (error) {
        if (isAlreadyExists(error)) return false;
        throw error;
      }
    });
    if (created) {
      this.#log('I', `Successfully registered node "${this.#nodeName}"`);
      return;
    }
    // The Node exists (a restart, a reboot): refresh what the kubelet owns, never the taints.
    await this.#retry(`update node "${this.#nodeName}"`, deadline, () =>
      core.patchNode(
        {
          name: this.#nodeName,
          body: {
            metadata: {
              labels: this.#defaultLabels(),
              annotations: {
                [attachDetachAnnotation]: 'true',
                [hostNodeAnnotation.key]: this.#handedToKwok ? hostNodeAnnotation.value : null,
              },
            },
          },
        },
        this.#call(true),
      ),
    );
    await this.#retry(`update the status of node "${this.#nodeName}"`, deadline, () =>
      // A strategic merge patch, as the kubelet's PatchNodeStatus sends: conditions merge by
      // type, so the ones others own (the agent's health conditions) stay.
      core.patchNodeStatus(
        { name: this.#nodeName, body: { status: node.status } },
        this.#call('strategic'),
      ),
    );
    this.#log(
      'I',
      `Node "${this.#nodeName}" was already registered; updated it (boot id ${this.#machine.bootId})`,
    );
  }

  // 4. Serving certificate.

  async #servingCertificate(credentials: KubeCredentials): Promise<void> {
    const file = formatWindowsPath([
      ...windowsPathSegments(this.#settings.certDir),
      servingCertificateFile,
    ]);
    const existing = await this.#machine.fs.tryReadFile(file);
    if (existing) {
      const text = existing.toString('utf8');
      const cert = text.match(
        /-----BEGIN CERTIFICATE-----[\s\S]*?-----END CERTIFICATE-----\n?/,
      )?.[0];
      const key = text.match(
        /-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?-----END [A-Z ]*PRIVATE KEY-----\n?/,
      )?.[0];
      if (cert && key && certificateUsable(cert, key)) return;
    }
    const keys = await generateKeyPair();
    const request = await createCsrPem(
      {
        commonName: `system:node:${this.#nodeName}`,
        organizations: ['system:nodes'],
        dnsNames: [this.#nodeName],
        ipAddresses: [this.#settings.nodeIp ?? this.#machine.address],
      },
      keys,
    );
    const certificates = kubeConfigFor(credentials).makeApiClient(k8s.CertificatesV1Api);
    const certificate = await this.#requestCertificate(certificates, {
      request,
      signerName: servingSignerName,
      usages: ['digital signature', 'key encipherment', 'server auth'],
      timeoutMs: this.#options.servingCsrTimeoutMs,
      what: 'serving certificate',
    });
    await this.#machine.fs.writeFileAtomic(
      file,
      `${certificate}${await privateKeyToPem(keys.privateKey)}`,
    );
    this.#log('I', `Serving certificate written to ${file}`);
  }

  // 5. kwok hand-over.

  /** Until stopped: the node is kwok's while the container runtime is up with a pod network. */
  async #superviseRuntime(): Promise<void> {
    while (!this.#signal.aborted) {
      await this.#refreshNetwork().catch((error: unknown) =>
        this.#log('W', `Cannot read the container runtime's network: ${(error as Error).message}`),
      );
      const ready = this.#readyForPods();
      if (ready !== this.#handedToKwok) {
        try {
          if (ready) await this.#learnContainerdVersion();
          await this.#core!.patchNode(
            {
              name: this.#nodeName,
              body: {
                metadata: {
                  annotations: {
                    [hostNodeAnnotation.key]: ready ? hostNodeAnnotation.value : null,
                  },
                },
              },
            },
            this.#call(true),
          );
          this.#handedToKwok = ready;
          this.#log(
            'I',
            ready
              ? 'Container runtime is up with a pod network: node handed to kwok'
              : this.#runtimeReady()
                ? `Container runtime network not ready (${this.#network?.status.ready === false ? this.#network.status.detail : 'unknown'}): node is NotReady`
                : 'Container runtime is down: node is NotReady',
          );
        } catch (error) {
          if (this.#signal.aborted) break;
          this.#log('W', `Cannot update node "${this.#nodeName}": ${(error as Error).message}`);
        }
      }
      await this.#syncNodeStatus();
      await sleep(this.#options.pollMs, undefined, { signal: this.#signal }).catch(() => {});
    }
  }

  /** What the kubelet's Ready condition says now (nodestatus.ReadyCondition, runtime.go). */
  #readiness(): KubeletReadiness {
    if (!this.#runtimeReady()) return { ready: false, message: 'container runtime is down' };
    const network = this.#network?.status;
    if (network && !network.ready) {
      return {
        ready: false,
        message: networkNotReadyMessage(network.message).replace(/^network is not ready: /, ''),
      };
    }
    return { ready: true };
  }

  /**
   * The kubelet's node status loop (node-status.ts): every nodeStatusUpdateFrequency, or at once
   * when its readiness changed, it reads its Node and patches its conditions if they differ from
   * what it would post (the node lifecycle controller marked them Unknown, say), or if
   * nodeStatusReportFrequency passed since its last post. Only this process speaks for the
   * Node's Ready: frozen, it posts nothing.
   */
  async #syncNodeStatus(): Promise<void> {
    const readiness = this.#readiness();
    const key = JSON.stringify(readiness);
    const now = Date.now();
    if (key === this.#statusReadiness && now - this.#statusCheckedAt < nodeStatusUpdateFrequencyMs)
      return;
    this.#statusCheckedAt = now;
    this.#statusReadiness = key;
    try {
      const node = await this.#core!.readNode({ name: this.#nodeName }, this.#call());
      const current = node.status?.conditions ?? [];
      const conditions = kubeletConditions(current, readiness, new Date(now));
      if (
        !kubeletConditionsChanged(current, conditions) &&
        now - this.#statusPostedAt < nodeStatusReportFrequencyMs
      )
        return;
      // A strategic merge patch, as PatchNodeStatus sends: conditions merge by type, so the ones
      // others own (the agent's health conditions) stay.
      await this.#core!.patchNodeStatus(
        { name: this.#nodeName, body: { status: { conditions } } },
        this.#call('strategic'),
      );
      this.#statusPostedAt = now;
    } catch (error) {
      if (!this.#signal.aborted) {
        this.#log(
          'W',
          `Error updating node status, will retry: ${this.#nodeName}: ${(error as Error).message}`,
        );
      }
    }
  }

  /** Takes the node away from kwok when the kubelet stops (its lease then lapses). */
  async #release(core: k8s.CoreV1Api): Promise<void> {
    // Bounded, and never what keeps a test process alive once the API server is gone.
    const deadline = Date.now() + Math.min(this.#options.apiTimeoutMs * 3, 15_000);
    for (let attempt = 0; Date.now() < deadline; attempt++) {
      try {
        await core.patchNode(
          {
            name: this.#nodeName,
            body: { metadata: { annotations: { [hostNodeAnnotation.key]: null } } },
          },
          callOptions(undefined, this.#options.apiTimeoutMs, true),
        );
        return;
      } catch (error) {
        if (isNotFound(error)) return;
        await sleep(Math.min(200 * 2 ** attempt, 2000), undefined, { ref: false });
      }
    }
  }

  // API helpers.

  #call(mergePatch: boolean | 'strategic' = false): k8s.ConfigurationOptions {
    return callOptions(this.#signal, this.#options.apiTimeoutMs, mergePatch);
  }

  /**
   * Calls `operation` until it succeeds, the deadline passes (the last error is thrown) or
   * the process is stopped. Client errors other than conflicts and throttling are final.
   */
  async #retry<T>(what: string, deadline: number, operation: () => Promise<T>): Promise<T> {
    for (let attempt = 0; ; attempt++) {
      this.#signal.throwIfAborted();
      try {
        return await operation();
      } catch (error) {
        if (this.#signal.aborted) throw error;
        const status = httpStatus(error);
        const final =
          status !== undefined && status >= 400 && status < 500 && status !== 409 && status !== 429;
        const detail = describeError(error);
        if (final) throw new Error(`Cannot ${what}: ${detail}`);
        if (Date.now() >= deadline) throw new Error(`Gave up trying to ${what}: ${detail}`);
        this.#log('W', `Cannot ${what} (will retry): ${detail}`);
        await sleep(Math.min(250 * 2 ** attempt, 5000), undefined, { signal: this.#signal });
      }
    }
  }
}

/**
 * The kubelet's CSR name for a bootstrap key (client-go's digestedName): SHA-512/256 over the
 * base64url of the public key, CN, organizations and usages, each followed by "|".
 */
export function csrName(
  keyPem: string,
  commonName: string,
  organizations: readonly string[],
  usages: readonly string[],
): string {
  const hash = createHash('sha512-256');
  const write = (data: Buffer) => {
    hash.update(data.toString('base64url'));
    hash.update('|');
  };
  write(createPublicKey(keyPem).export({ type: 'spki', format: 'der' }));
  write(Buffer.from(commonName));
  for (const organization of organizations) write(Buffer.from(organization));
  for (const usage of usages) write(Buffer.from(usage));
  return `node-csr-${hash.digest().toString('base64url')}`;
}

/** Whether a certificate is valid for another minute and matches its key. */
function certificateUsable(certPem: string, keyPem: string): boolean {
  try {
    const cert = new X509Certificate(certPem);
    if (new Date(cert.validTo).getTime() < Date.now() + 60_000) return false;
    return cert.checkPrivateKey(createPrivateKey(keyPem));
  } catch {
    return false;
  }
}

function describeError(error: unknown): string {
  const status = httpStatus(error);
  const body = (error as { body?: unknown }).body;
  let message = (error as Error)?.message ?? String(error);
  if (typeof body === 'string') {
    try {
      message = (JSON.parse(body) as { message?: string }).message ?? message;
    } catch {
      // Not JSON.
    }
  }
  return status === undefined ? message : `HTTP ${status}: ${message}`;
}
