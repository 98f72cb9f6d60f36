/** A host's Node as the rollout engine observes it (host-steps.ts, set-aside.ts). */
export interface ObservedNode {
  name: string;
  ready: boolean;
  unschedulable: boolean;
  /**
   * The node carries winfleet.io/cordoned-by=winfleet and status.rollout.cordoned names it:
   * the annotation alone (which the node may write on itself) is not enough.
   */
  cordonedByWinfleet: boolean;
  /** status.nodeInfo.bootID: changes with every boot (on Windows, the kernel's BootId counter). */
  bootId?: string;
  /** Since when the Node is Ready (its Ready condition's lastTransitionTime), while it is. */
  readySince?: string;
  /**
   * The agent's pre-pull of its pool's images for the Node's current boot and services version
   * (src/api/pre-pull.ts prePullState): running, or ended however it ended (or nothing to pull:
   * no list on the Node); absent when the Node shows no run of this boot and version.
   */
  prePull?: 'pulling' | 'ended';
}
