/**
 * The registry the lab and the end-to-end tests put in place of mcr.microsoft.com and Docker
 * Hub: a loopback docker-registry seeded with the lab catalog, plus the `images.mirrors`
 * configuration that sends lookups of those registries to it, so the seed manifests apply
 * unchanged.
 */
import type { RegistryMirror } from '../../src/images/registry-mirrors.ts';
import { type CatalogEntry, labCatalog } from './catalog.ts';
import {
  startTestRegistry,
  type TestRegistry,
  type TestRegistryOptions,
} from './registry-process.ts';
import { type SeededImage, seedImages } from './seed-images.ts';

export interface MirrorRegistry {
  registry: TestRegistry;
  seeded: SeededImage[];
  /** Registry host → mirrors, the shape of winfleet's `images.mirrors` config. */
  mirrors: Record<string, RegistryMirror[]>;
  stop(): Promise<void>;
}

/** Starts a registry, seeds `catalog` (the lab catalog by default) and returns its mirror config. */
export async function startMirrorRegistry(
  catalog: readonly CatalogEntry[] = labCatalog,
  options: Omit<TestRegistryOptions, 'auth'> = {},
): Promise<MirrorRegistry> {
  const registry = await startTestRegistry(options);
  try {
    const seeded = await seedImages(registry, catalog);
    const mirror: RegistryMirror = {
      endpoint: registry.url,
      ...(registry.url.startsWith('http:') ? { insecure: true } : {}),
      ...(registry.caPem ? { caBundle: registry.caPem } : {}),
    };
    const upstreams = [...new Set(catalog.map((entry) => entry.upstream))];
    return {
      registry,
      seeded,
      mirrors: Object.fromEntries(upstreams.map((host) => [host, [mirror]])),
      stop: () => registry.stop(),
    };
  } catch (error) {
    await registry.stop();
    throw error;
  }
}
