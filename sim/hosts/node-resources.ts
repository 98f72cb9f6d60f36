/**
 * Capacity and allocatable of a simulated Windows node, as the kubelet computes them:
 * capacity from the machine (processors, memory, drive C:, max pods), allocatable = capacity
 * minus systemReserved and kubeReserved (on Windows reservations only lower allocatable; the
 * kubelet enforces nothing). Quantities are printed the way the kubelet prints them (memory
 * in Ki, CPU in millicores when fractional).
 */
import { parseQuantity } from './go-values.ts';

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

/**
 * Reads a reservation's quantity as a number (CPU in cores, memory and storage in bytes), with
 * resource.ParseQuantity's grammar (go-values.ts); a negative one is refused.
 */
export function quantityValue(quantity: string, field: string): number {
  const value = parseQuantity(quantity.trim());
  if (value === undefined || value < 0) {
    throw new Error(
      `invalid configuration: ${field} "${quantity}" is not a quantity such as 500m, 2Gi or 1G`,
    );
  }
  return value;
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
