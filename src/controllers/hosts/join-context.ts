/**
 * What every join step of the host controller runs with (its dependencies, the manifest
 * publisher, the API server's version) and `step`, which records a step's failure on the host.
 */
import { ConditionReason, ConditionType, type JoinStep } from '../../api/reasons.ts';
import type { WindowsHost, WindowsHostStatus } from '../../api/windows-host.ts';
import type { HostStatus } from '../../fleet/host-status.ts';
import { failedRemoteStep } from '../../hostaccess/remote-host.ts';
import type { HostControllerDeps } from './host-deps.ts';
import type { createManifestPublisher } from './manifest-publisher.ts';

export interface JoinContext extends HostControllerDeps {
  publish: ReturnType<typeof createManifestPublisher>;
  /** The API server's gitVersion (cached), for the kubelet skew policy. */
  apiServerVersion: () => Promise<string>;
  /**
   * How a pass writes what it changed in the host's status at its end (hostPass); default
   * writeHostStatus over `kc`. A test binds a recorder.
   */
  writeStatus?: (host: WindowsHost, status: WindowsHostStatus) => Promise<void>;
}

/**
 * Runs `work` as the named step: a failure is recorded as the host's last error and as
 * Bootstrapped=False, under the step the host reported when it ran there.
 * @package
 */
export async function step<T>(hs: HostStatus, name: JoinStep, work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    const stepName = failedRemoteStep(error) ?? name;
    hs.error(stepName, (error as Error).message);
    hs.set(
      ConditionType.Bootstrapped,
      'False',
      ConditionReason.StepFailed,
      `${stepName}: ${(error as Error).message}`,
    );
    throw error;
  }
}
