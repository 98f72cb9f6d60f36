/**
 * Capacity and allocatable of a simulated Windows node, as the kubelet computes them:
 * capacity from the machine (processors, memory, drive C:, max pods), allocatable = capacity
 * minus systemReserved and kubeReserved (on Windows reservations only lower allocatable; the
 * kubelet enforces nothing). Quantities are printed the way the kubelet prints them (memory
 * in Ki, CPU in millicores when fractional).
 */
export interface MachineResources {
  cpus: number;
  memoryBytes: number;
  diskBytes: number;
  maxPods: number;
}

export interface NodeResources {
  capacity: Record<string, string>;
  allocatable: Record<string, string>;
}

const suffixes: Record<string, number> = {
  '': 1,
  n: 1e-9,
  u: 1e-6,
  m: 1e-3,
  k: 1e3,
  M: 1e6,
  G: 1e9,
  T: 1e12,
  P: 1e15,
  E: 1e18,
  Ki: 2 ** 10,
  Mi: 2 ** 20,
  Gi: 2 ** 30,
  Ti: 2 ** 40,
  Pi: 2 ** 50,
  Ei: 2 ** 60,
};

/**
 * Reads a Kubernetes quantity as a number (CPU in cores, memory and storage in bytes).
 * client-node's parser is not part of its public API, and quantities are this small grammar.
 */
export function quantityValue(quantity: string, field: string): number {
  const match =
    /^\+?((?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?)(n|u|m|k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei)?$/.exec(
      quantity.trim(),
    );
  if (!match) {
    throw new Error(
      `invalid configuration: ${field} "${quantity}" is not a quantity such as 500m, 2Gi or 1G`,
    );
  }
  return Number(match[1]) * suffixes[match[2] ?? '']!;
}

function formatCpu(millicores: number): string {
  return millicores % 1000 === 0 ? String(millicores / 1000) : `${millicores}m`;
}

function formatKi(bytes: number): string {
  return `${Math.floor(bytes / 1024)}Ki`;
}

/** Capacity and allocatable after subtracting the reservations (never below zero). */
export function nodeResources(
  machine: MachineResources,
  reservations: Record<string, string>[],
): NodeResources {
  const reserved = { cpu: 0, memory: 0, 'ephemeral-storage': 0, pid: 0 };
  for (const reservation of reservations) {
    for (const [name, quantity] of Object.entries(reservation)) {
      if (!(name in reserved)) {
        throw new Error(
          `invalid configuration: cannot reserve "${name}"; reserve cpu, memory, ephemeral-storage or pid`,
        );
      }
      reserved[name as keyof typeof reserved] += quantityValue(quantity, `reserved ${name}`);
    }
  }
  const cpuMillis = machine.cpus * 1000;
  const allocatableCpu = Math.max(0, cpuMillis - Math.round(reserved.cpu * 1000));
  const allocatableMemory = Math.max(0, machine.memoryBytes - reserved.memory);
  const allocatableStorage = Math.max(0, machine.diskBytes - reserved['ephemeral-storage']);
  return {
    capacity: {
      cpu: formatCpu(cpuMillis),
      memory: formatKi(machine.memoryBytes),
      'ephemeral-storage': formatKi(machine.diskBytes),
      pods: String(machine.maxPods),
    },
    allocatable: {
      cpu: formatCpu(allocatableCpu),
      memory: formatKi(allocatableMemory),
      'ephemeral-storage': String(Math.floor(allocatableStorage)),
      pods: String(machine.maxPods),
    },
  };
}
