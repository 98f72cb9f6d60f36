/**
 * What this process sent to hosts over SFTP, in bytes: payload files and config files alike,
 * counted where the SFTP writes are issued (ssh-session.ts), so that what the operator's
 * bandwidth costs per host can be read from its own /metrics
 * (`winfleet_host_bytes_sent_total`) rather than guessed from the network. The counter belongs
 * to no registry until the operator registers it in the one it serves. No labels: a host's name
 * would make its cardinality grow with the fleet.
 */
import { Counter, type Registry } from 'prom-client';

export const hostBytesSentMetric = 'winfleet_host_bytes_sent_total';

const counter = new Counter({
  name: hostBytesSentMetric,
  help: 'Bytes this process wrote to hosts over SFTP (payload files, agent, config)',
  registers: [],
});

/** Counts `bytes` written to a host over SFTP. */
export function countBytesSent(bytes: number): void {
  if (bytes > 0) counter.inc(bytes);
}

/** The bytes counted so far in this process. */
export async function bytesSentSoFar(): Promise<number> {
  return (await counter.get()).values[0]?.value ?? 0;
}

/** Serves the counter in `registry` (once per registry). */
export function registerBytesSent(registry: Registry): void {
  if (!registry.getSingleMetric(hostBytesSentMetric)) registry.registerMetric(counter);
}
