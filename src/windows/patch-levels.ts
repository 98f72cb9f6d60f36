/**
 * The patch levels (update build revision, UBR: the fourth part of 10.0.17763.379) that a
 * feature winfleet's nodes use needs on a Windows Server release, above the release itself.
 * Windows Server cumulative updates include every earlier one, so "KB X or later" is the same as
 * "UBR at least the one KB X brought".
 *
 * Only requirements with a source are listed. Looked at and left out (no patch level to list):
 * - Direct Server Return, IPv4/IPv6 dual-stack and client IP preservation: the Kubernetes docs
 *   (concepts/services-networking/windows-networking.md, "Windows Service Settings") give
 *   "Windows Server 2019" as the minimum build, with no update; winfleet's kube-proxy does not
 *   turn DSR on (src/payload/node-services.ts) and its pod network is IPv4.
 * - Session affinity needs Windows Server 2022 (same table): a per-Service choice, not a node one.
 * - HostProcess containers: KEP-1981 lists "Windows 2019 LTSC and all future versions" and "no
 *   backports for OS components"; only its bind-mount volume behaviour needs the July 2022 update
 *   on 2019 (and containerd 1.7). winfleet's node services run as Windows services, not as
 *   HostProcess pods, so the join does not depend on it.
 */

/** A feature of a node that needs a minimum patch level on some release. */
export type PatchFeature = 'overlay';

export interface PatchRequirement {
  feature: PatchFeature;
  /** What the feature is, for messages: "overlay networking (an HNS Overlay network: …)". */
  title: string;
  /** major.minor.build of the release, as windowsReleases[].build. */
  build: string;
  /** The release's short name ("2019"). */
  release: string;
  /** The lowest UBR that has the fix. */
  minUbr: number;
  /** The update that brought it ("KB4489899"). */
  kb: string;
}

export const patchRequirements: readonly PatchRequirement[] = [
  {
    // Overlay (VXLAN) networking on Windows Server 2019 came with KB4489899:
    // - kubernetes/website content/en/docs/concepts/services-networking/windows-networking.md,
    //   "Network modes", Overlay: "This option requires KB4489899 on Windows Server 2019";
    // - kubernetes/website .../tasks/administer-cluster/kubeadm/adding-windows-nodes.md (v1.18):
    //   "If you are using VXLAN/Overlay networking you must have also have KB4489899 installed";
    // - Microsoft networking blog "Introducing: Kubernetes Overlay Networking for Windows"
    //   (2019-03-27): overlay for Kubernetes "via Windows update KB4489899";
    // - KB4489899 is "Windows 10, version 1809 (OS Build 17763.379 with KB4489899)"
    //   (MicrosoftDocs, Microsoft Defender ATP "Configure Microsoft Cloud App Security
    //   integration"); its support page title is "March 12, 2019—KB4489899 (OS Build 17763.379)".
    // sig-windows-tools' node preparation checks the same (build 2019+ with KB4489899 for overlay).
    feature: 'overlay',
    // The network modes whose node network is an HNS Overlay network (src/api/network-mode.ts
    // usesHnsOverlay): flannel-vxlan, ovn-hybrid, and external with Calico VXLAN; not
    // flannel-host-gw, routed (L2Bridge) or Antrea (OVS on a Transparent network).
    title:
      'overlay networking (an HNS Overlay network: Flannel VXLAN, OVN hybrid overlay, Calico VXLAN)',
    build: '10.0.17763',
    release: '2019',
    minUbr: 379,
    kb: 'KB4489899',
  },
];

/** The requirements that apply to a host of build major.minor.build. */
export function patchRequirementsFor(build: string): PatchRequirement[] {
  return patchRequirements.filter((r) => r.build === build);
}
