/** Sample manifests from the seed documents, kept in the project as test fixtures. */
import { readFileSync } from 'node:fs';
import type * as k8s from '@kubernetes/client-node';
import { parseManifests } from '../../src/kube/manifests.ts';

/** Reads and parses a fixture from sim/testkit/fixtures. */
export function loadFixture(name: string): k8s.KubernetesObject[] {
  return parseManifests(readFileSync(new URL(`./fixtures/${name}`, import.meta.url), 'utf8'));
}
