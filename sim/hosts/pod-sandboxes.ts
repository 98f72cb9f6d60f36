/**
 * The pod sandboxes of a simulated host's kubelet: for each pod bound to its node (watched with
 * the node's own credentials, fieldSelector spec.nodeName), what the kubelet and containerd do
 * before any container runs.
 * - A pod on the pod network gets an address from the host's CNI config (sim-cni.ts), and the
 *   kubelet, as the node, sets the pod's hostIP and podIP; a host-network pod gets the node's
 *   address. kwok then plays the containers (kwok-stages-host-pods.yaml waits for the podIP).
 * - Without a pod network the pod stays Pending with the kubelet's NetworkNotReady event; a
 *   sandbox whose CNI ADD fails stays Pending with FailedCreatePodSandBox, retried as the
 *   kubelet does.
 * - A pod that is deleted or finished has its sandbox torn down (CNI DEL releases its address);
 *   at start, addresses held for sandboxes of pods that are gone are released, as the kubelet's
 *   sandbox garbage collection does.
 * Event wording follows kubelet v1.36 (pkg/kubelet/kubelet.go, kuberuntime) and containerd
 * v2.4.2 (internal/cri/server/sandbox_run.go).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import * as k8s from '@kubernetes/client-node';
import { type Informer, objectKey } from '../../src/controller-runtime/informer.ts';
import { runPodSandbox, stopPodSandbox } from './containerd-standin.ts';
import { callOptions } from './kubelet-kubeconfig.ts';
import type { SimMachine } from './machine.ts';
import { hostLocalHolders, type RuntimeNetwork, SimCni, sandboxIdFor } from './sim-cni.ts';

export interface PodSandboxesOptions {
  machine: SimMachine;
  /** The node's own credentials. */
  kc: k8s.KubeConfig;
  /** The node's pods (node-pods.ts); whoever made it starts it. */
  pods: Informer<k8s.V1Pod>;
  nodeName: string;
  /** The node's address: a host-network pod's IP. */
  nodeIP: string;
  signal: AbortSignal;
  apiTimeoutMs: number;
  /** How often pods whose sandbox failed are tried again. */
  retryMs: number;
  log: (severity: 'I' | 'W' | 'E', message: string) => void;
  /** The runtime's network now; undefined while the runtime is down. */
  network: () => RuntimeNetwork | undefined;
}

function isTerminal(pod: k8s.V1Pod): boolean {
  return (
    pod.metadata?.deletionTimestamp !== undefined ||
    pod.status?.phase === 'Succeeded' ||
    pod.status?.phase === 'Failed'
  );
}

/** The kubelet's NetworkNotReady message (kubelet.go: "network is not ready: %v"). */
export function networkNotReadyMessage(message: string): string {
  return `network is not ready: container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady message:Network plugin returns error: ${message}`;
}

export class PodSandboxes {
  readonly #options: PodSandboxesOptions;
  readonly #informer: Informer<k8s.V1Pod>;
  readonly #core: k8s.CoreV1Api;
  readonly #node: k8s.NodeV1Api;
  /** Pods to look at, by key; the last object seen (kept for a pod that was deleted). */
  readonly #queue = new Map<string, k8s.V1Pod>();
  /** Sandboxes this kubelet set up and has not torn down, by pod key. */
  readonly #sandboxes = new Map<string, string>();
  /** Deleted or finished pods whose sandbox could not be torn down yet. */
  readonly #pendingTeardown = new Map<string, k8s.V1Pod>();
  /** The last warning event per pod key, so each is posted once. */
  readonly #warned = new Map<string, string>();
  #wake: (() => void) | undefined;
  #worker: Promise<void> | undefined;

  constructor(options: PodSandboxesOptions) {
    this.#options = options;
    this.#core = options.kc.makeApiClient(k8s.CoreV1Api);
    this.#node = options.kc.makeApiClient(k8s.NodeV1Api);
    this.#informer = options.pods;
    const enqueue = (pod: k8s.V1Pod) => this.#enqueue(pod);
    this.#informer
      .on('add', enqueue)
      .on('update', enqueue)
      .on('delete', (pod) => this.#enqueue(pod, true));
  }

  /** Starts watching and working until the signal aborts. */
  start(): void {
    const { signal } = this.#options;
    signal.addEventListener('abort', () => this.#wake?.());
    this.#worker = this.#work();
  }

  /** Resolves when the worker has stopped (after the signal aborted). */
  stopped(): Promise<void> {
    return this.#worker ?? Promise.resolve();
  }

  /** Looks at every pod again (the runtime's network changed). */
  nudge(): void {
    for (const pod of this.#informer.list()) this.#queue.set(objectKey(pod), pod);
    this.#wake?.();
  }

  #enqueue(pod: k8s.V1Pod, deleted = false): void {
    const copy: k8s.V1Pod = deleted
      ? { ...pod, metadata: { ...pod.metadata, deletionTimestamp: new Date(0) } }
      : pod;
    this.#queue.set(objectKey(pod), copy);
    this.#wake?.();
  }

  async #work(): Promise<void> {
    const { signal, retryMs } = this.#options;
    await Promise.race([
      this.#informer.whenSynced(),
      new Promise((resolve) => signal.addEventListener('abort', resolve, { once: true })),
    ]);
    if (signal.aborted) return;
    await this.#collectGarbage().catch((error: unknown) =>
      this.#options.log('W', `Sandbox garbage collection failed: ${(error as Error).message}`),
    );
    let nextRetry = Date.now() + retryMs;
    while (!signal.aborted) {
      if (this.#queue.size === 0) {
        await new Promise<void>((resolve) => {
          this.#wake = resolve;
          sleep(Math.max(0, nextRetry - Date.now()), undefined, { signal, ref: false }).then(
            resolve,
            resolve,
          );
        });
        this.#wake = undefined;
        if (Date.now() >= nextRetry) {
          // As the kubelet's pod workers: pods still without a sandbox are tried again, and
          // sandboxes that could not be torn down.
          for (const pod of this.#informer.list()) {
            if (!pod.status?.podIP && !isTerminal(pod)) this.#queue.set(objectKey(pod), pod);
          }
          for (const [key, pod] of this.#pendingTeardown) this.#queue.set(key, pod);
          nextRetry = Date.now() + retryMs;
        }
      }
      const batch = [...this.#queue.entries()];
      this.#queue.clear();
      for (const [key, pod] of batch) {
        if (signal.aborted) break;
        try {
          await this.#sync(key, pod);
        } catch (error) {
          if (signal.aborted) break;
          this.#options.log('W', `Cannot sync pod "${key}": ${(error as Error).message}`);
        }
      }
    }
  }

  /**
   * The CRI runtime handler of the pod's RuntimeClass, read as the node (the kubelet's
   * RuntimeClass manager, pkg/kubelet/runtimeclass); the default handler without one.
   */
  async #runtimeHandler(pod: k8s.V1Pod): Promise<string | undefined> {
    const name = pod.spec?.runtimeClassName;
    if (!name) return undefined;
    try {
      const rc = await this.#node.readRuntimeClass(
        { name },
        callOptions(this.#options.signal, this.#options.apiTimeoutMs),
      );
      return rc.handler;
    } catch (error) {
      throw new Error(`failed to get RuntimeClass "${name}": ${(error as Error).message}`);
    }
  }

  async #sync(key: string, pod: k8s.V1Pod): Promise<void> {
    if (isTerminal(pod)) {
      await this.#tearDown(key, pod);
      if (pod.metadata?.deletionTimestamp) this.#warned.delete(key);
      return;
    }
    if (pod.status?.podIP) return;
    if (pod.spec?.hostNetwork) {
      await this.#setAddress(pod, this.#options.nodeIP);
      return;
    }
    const network = this.#options.network();
    if (!network) return; // The runtime is down: nothing starts.
    if (!network.status.ready) {
      await this.#warn(key, pod, 'NetworkNotReady', networkNotReadyMessage(network.status.message));
      return;
    }
    const uid = pod.metadata?.uid ?? '';
    const sandbox = sandboxIdFor(uid);
    try {
      // RunPodSandbox with the handler of the pod's RuntimeClass: containerd starts the
      // sandbox's shim, then calls the CNI.
      await runPodSandbox(this.#options.machine, sandbox, await this.#runtimeHandler(pod));
    } catch (error) {
      await this.#warn(
        key,
        pod,
        'FailedCreatePodSandBox',
        `Failed to create pod sandbox: rpc error: code = Unknown desc = ${(error as Error).message}`,
      );
      return;
    }
    try {
      const address = await SimCni.of(this.#options.machine).add({
        network: network.status.network,
        dirs: network.dirs,
        containerId: sandbox,
      });
      this.#sandboxes.set(key, sandbox);
      await this.#setAddress(pod, address.ip);
      this.#warned.delete(key);
      this.#options.log(
        'I',
        `Pod "${key}" sandbox ${sandbox.slice(0, 13)} has IP ${address.cidr} on network "${address.network}"`,
      );
    } catch (error) {
      await this.#warn(
        key,
        pod,
        'FailedCreatePodSandBox',
        `Failed to create pod sandbox: rpc error: code = Unknown desc = failed to setup network for sandbox ${JSON.stringify(sandbox)}: ${(error as Error).message}`,
      );
    }
  }

  async #tearDown(key: string, pod: k8s.V1Pod): Promise<void> {
    const sandbox = this.#sandboxes.get(key);
    if (!sandbox) return;
    const network = this.#options.network();
    if (!network?.status.ready) {
      // StopPodSandbox fails until the runtime has its network again; the kubelet retries.
      this.#pendingTeardown.set(key, pod);
      return;
    }
    await SimCni.of(this.#options.machine).del({
      network: network.status.network,
      dirs: network.dirs,
      containerId: sandbox,
    });
    await stopPodSandbox(this.#options.machine, sandbox);
    this.#sandboxes.delete(key);
    this.#pendingTeardown.delete(key);
  }

  /** Releases addresses held for sandboxes of pods no longer on this node. */
  async #collectGarbage(): Promise<void> {
    const network = this.#options.network();
    if (!network?.status.ready) return;
    const live = new Map<string, string>();
    for (const pod of this.#informer.list()) {
      if (!isTerminal(pod)) live.set(sandboxIdFor(pod.metadata?.uid ?? ''), objectKey(pod));
    }
    const cni = SimCni.of(this.#options.machine);
    for (const holder of await hostLocalHolders(
      this.#options.machine.fs,
      network.status.network.name,
    )) {
      const key = live.get(holder);
      if (key) {
        this.#sandboxes.set(key, holder);
        continue;
      }
      await cni.del({ network: network.status.network, dirs: network.dirs, containerId: holder });
      this.#options.log(
        'I',
        `Released the address of sandbox ${holder.slice(0, 13)}, whose pod is gone`,
      );
    }
  }

  /** Sets the pod's hostIP and podIP as the node (the kubelet's status manager does). */
  async #setAddress(pod: k8s.V1Pod, ip: string): Promise<void> {
    const { nodeIP, signal, apiTimeoutMs } = this.#options;
    await this.#core.patchNamespacedPodStatus(
      {
        name: pod.metadata!.name!,
        namespace: pod.metadata!.namespace!,
        body: {
          status: {
            hostIP: nodeIP,
            hostIPs: [{ ip: nodeIP }],
            podIP: ip,
            podIPs: [{ ip }],
          },
        },
      },
      callOptions(signal, apiTimeoutMs, true),
    );
  }

  /** Posts a Warning event on the pod as the kubelet, once per reason and message. */
  async #warn(key: string, pod: k8s.V1Pod, reason: string, message: string): Promise<void> {
    const said = `${reason}: ${message}`;
    if (this.#warned.get(key) === said) return;
    this.#warned.set(key, said);
    this.#options.log('W', `Pod "${key}": ${said}`);
    const { nodeName, signal, apiTimeoutMs } = this.#options;
    const now = new Date();
    await this.#core.createNamespacedEvent(
      {
        namespace: pod.metadata!.namespace!,
        body: {
          metadata: { generateName: `${pod.metadata!.name}.` },
          involvedObject: {
            apiVersion: 'v1',
            kind: 'Pod',
            name: pod.metadata!.name,
            namespace: pod.metadata!.namespace,
            uid: pod.metadata!.uid,
          },
          reason,
          message,
          type: 'Warning',
          source: { component: 'kubelet', host: nodeName },
          reportingComponent: 'kubelet',
          reportingInstance: nodeName,
          firstTimestamp: now,
          lastTimestamp: now,
          count: 1,
        },
      },
      callOptions(signal, apiTimeoutMs),
    );
  }
}
