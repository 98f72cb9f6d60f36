/**
 * The validating half of the Pod webhook: rejects Windows pods whose spec cannot work on
 * Windows. Each problem names the field and says what to do instead. (The API server rejects
 * some of these itself once spec.os.name=windows is set; these rules also cover pods it lets
 * through and give one message per field.)
 */
import type * as k8s from '@kubernetes/client-node';
import type { AdmissionProblem } from './admission-warning.ts';
import { hostProcessState, osLabel, podContainers } from './pod-os.ts';

/** The accounts a HostProcess container may run as (besides a local group name). */
export const hostProcessAccounts = [
  'NT AUTHORITY\\SYSTEM',
  'NT AUTHORITY\\Local service',
  'NT AUTHORITY\\NetworkService',
];

export interface ValidationContext {
  /** GMSACredentialSpec names when the CRD is installed; undefined when it is not. */
  gmsaCredentialSpecs?: ReadonlySet<string>;
}

/** The CRD that holds gMSA credential specs (installed with the Windows gMSA webhook). */
export const gmsaCrd = 'gmsacredentialspecs.windows.k8s.io';

/**
 * gMSA credential spec names winfleet cannot check because the GMSACredentialSpec CRD is not
 * installed (`specs` undefined). The pod is admitted with a warning, not rejected: nothing in
 * the cluster then resolves the name, but a pod that also carries the spec itself
 * (gmsaCredentialSpec) needs no CRD, and such pods are not warned about.
 * @package
 */
export function gmsaWithoutCrd(
  pod: k8s.V1Pod,
  specs: ReadonlySet<string> | undefined,
): AdmissionProblem[] {
  if (specs) return [];
  const named: [string, k8s.V1WindowsSecurityContextOptions | undefined][] = [
    ['spec.securityContext', pod.spec?.securityContext?.windowsOptions],
    ...podContainers(pod).map(
      ({ path, container }) =>
        [`${path}.securityContext`, container.securityContext?.windowsOptions] as [
          string,
          k8s.V1WindowsSecurityContextOptions | undefined,
        ],
    ),
  ];
  return named
    .filter(([, options]) => options?.gmsaCredentialSpecName && !options.gmsaCredentialSpec)
    .map(([path, options]) => ({
      field: `${path}.windowsOptions.gmsaCredentialSpecName`,
      fix: `install the gMSA webhook and CRD ${gmsaCrd}, or remove the name`,
      detail: `without the CRD nothing resolves "${options!.gmsaCredentialSpecName}" and the container gets no gMSA identity`,
    }));
}

/** Linux-only securityContext fields and what to say about each. */
const linuxOnlyFields: [keyof k8s.V1SecurityContext | keyof k8s.V1PodSecurityContext, string][] = [
  ['seLinuxOptions', 'SELinux does not exist on Windows; remove it'],
  ['capabilities', 'Linux capabilities do not exist on Windows; remove them'],
  ['runAsUser', 'Windows has no numeric user ids; remove it and use windowsOptions.runAsUserName'],
  [
    'runAsGroup',
    'Windows has no numeric group ids; remove it and use windowsOptions.runAsUserName',
  ],
  ['procMount', 'procMount is Linux-only; remove it'],
  ['seccompProfile', 'seccomp is Linux-only; remove it'],
  ['appArmorProfile', 'AppArmor is Linux-only; remove it'],
];

function isAllowedHostProcessUser(name: string | undefined): boolean {
  if (!name) return false;
  if (hostProcessAccounts.some((a) => a.toLowerCase() === name.toLowerCase())) return true;
  // A local group: a plain name without a domain part.
  return !name.includes('\\') && /^[^"/[\]:|<>+=;,?*@]{1,256}$/.test(name);
}

/** Problems with a Windows pod; empty when it can run on Windows. */
export function validateWindowsPod(pod: k8s.V1Pod, context: ValidationContext = {}): string[] {
  const problems: string[] = [];
  const spec = pod.spec;
  if (!spec) return ['spec: a pod needs a spec'];
  const hostProcess = hostProcessState(pod);
  podPlacementProblems(spec, hostProcess, problems);
  if (hostProcess === 'all') hostProcessProblems(pod, spec, problems);
  const podSecurity = spec.securityContext as Record<string, unknown> | undefined;
  for (const [field, fix] of linuxOnlyFields) {
    if (podSecurity?.[field] !== undefined) problems.push(`spec.securityContext.${field}: ${fix}`);
  }
  for (const { path, container } of podContainers(pod)) {
    containerProblems(path, container, context, problems);
  }
  const podCredSpec = spec.securityContext?.windowsOptions?.gmsaCredentialSpecName;
  if (podCredSpec && context.gmsaCredentialSpecs && !context.gmsaCredentialSpecs.has(podCredSpec)) {
    problems.push(
      `spec.securityContext.windowsOptions.gmsaCredentialSpecName: GMSACredentialSpec "${podCredSpec}" does not exist; create it or fix the name`,
    );
  }
  return problems;
}

/** The pod's OS selection, host namespaces and HostProcess mix (pushed onto `problems`). */
function podPlacementProblems(
  spec: k8s.V1PodSpec,
  hostProcess: ReturnType<typeof hostProcessState>,
  problems: string[],
): void {
  if (spec.os?.name === 'linux') {
    problems.push(
      'spec.os.name: is linux, but the pod selects Windows nodes; set it to windows or remove the Windows selector',
    );
  }
  if (spec.nodeSelector?.[osLabel] === 'linux') {
    problems.push(
      `spec.nodeSelector.${osLabel}: is linux, but the pod is a Windows pod; set it to windows`,
    );
  }
  if (spec.hostPID)
    problems.push('spec.hostPID: Windows pods cannot share the host PID namespace; remove it');
  if (spec.hostIPC)
    problems.push('spec.hostIPC: Windows pods cannot share the host IPC namespace; remove it');
  if (hostProcess === 'mixed') {
    problems.push(
      'spec.containers[*].securityContext.windowsOptions.hostProcess: a pod cannot mix HostProcess and normal containers; set hostProcess on every container or on none',
    );
  }
  if (spec.hostNetwork && hostProcess === 'none') {
    problems.push(
      'spec.hostNetwork: Windows pods use the host network only as HostProcess pods; remove hostNetwork or set securityContext.windowsOptions.hostProcess: true',
    );
  }
}

/** A HostProcess pod's host network and the account each container runs as. */
function hostProcessProblems(pod: k8s.V1Pod, spec: k8s.V1PodSpec, problems: string[]): void {
  if (!spec.hostNetwork) {
    problems.push('spec.hostNetwork: HostProcess pods must set hostNetwork: true');
  }
  for (const { path, container } of podContainers(pod)) {
    const user =
      container.securityContext?.windowsOptions?.runAsUserName ??
      spec.securityContext?.windowsOptions?.runAsUserName;
    if (!isAllowedHostProcessUser(user)) {
      problems.push(
        `${path}.securityContext.windowsOptions.runAsUserName: HostProcess containers run as ${hostProcessAccounts.join(', ')} or a local group, got ${user === undefined ? 'nothing' : `"${user}"`}; set one of those`,
      );
    }
  }
}

/** One container's privileged flag, Linux-only fields, huge pages and gMSA spec name. */
function containerProblems(
  path: string,
  container: k8s.V1Container,
  context: ValidationContext,
  problems: string[],
): void {
  const security = container.securityContext as Record<string, unknown> | undefined;
  if (security?.privileged === true) {
    problems.push(
      `${path}.securityContext.privileged: privileged containers cannot run on Windows; remove it, or make the pod a HostProcess pod (windowsOptions.hostProcess: true, hostNetwork: true)`,
    );
  }
  for (const [field, fix] of linuxOnlyFields) {
    if (security?.[field] !== undefined) problems.push(`${path}.securityContext.${field}: ${fix}`);
  }
  for (const section of ['limits', 'requests'] as const) {
    for (const resource of Object.keys(container.resources?.[section] ?? {})) {
      if (resource.startsWith('hugepages-')) {
        problems.push(
          `${path}.resources.${section}.${resource}: Windows does not support huge pages; remove it`,
        );
      }
    }
  }
  const credSpec = container.securityContext?.windowsOptions?.gmsaCredentialSpecName;
  if (credSpec && context.gmsaCredentialSpecs && !context.gmsaCredentialSpecs.has(credSpec)) {
    problems.push(
      `${path}.securityContext.windowsOptions.gmsaCredentialSpecName: GMSACredentialSpec "${credSpec}" does not exist; create it or fix the name`,
    );
  }
}
