/**
 * The network tests need root: they create network namespaces, veth pairs, bridges and VXLAN
 * devices and run flanneld, which needs CAP_NET_ADMIN in its namespace. CI runs as root, so a
 * test run without it fails, saying so, rather than passing without having looked.
 */

/** Throws, naming what needs root and how to run it, unless this process runs as root. */
export function requireRoot(what: string): void {
  const uid = process.getuid?.();
  if (uid === 0) return;
  throw new Error(
    `${what} needs root (uid ${uid ?? 'unknown'}): it creates network namespaces, veth pairs, bridges and VXLAN devices with ip netns and runs flanneld; run the tests as root, as CI does (e.g. sudo make test)`,
  );
}
