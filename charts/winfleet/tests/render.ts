/**
 * Rendering the chart for its tests: `helm template` with values from an object (on stdin),
 * parsed into objects, and `helm template`'s error text when it refuses.
 */
import { fileURLToPath } from 'node:url';
import { parseAllDocuments, stringify } from 'yaml';
import { HelmError, runHelm } from '../../../sim/testkit/helm.ts';

export const chartDir = fileURLToPath(new URL('..', import.meta.url));
export const release = 'winfleet';
export const namespace = 'winfleet-system';

/** A rendered object, as far as the tests read it. */
export interface K8sObject {
  apiVersion: string;
  kind: string;
  metadata: {
    name: string;
    namespace?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
  };
  // biome-ignore lint/suspicious/noExplicitAny: tests read rendered objects freely.
  [key: string]: any;
}

export interface RenderOptions {
  namespace?: string;
  release?: string;
  /** `--kube-version`; default: what helm itself reports. */
  kubeVersion?: string;
  /** `--api-versions`. */
  apiVersions?: string[];
}

function templateArgs(options: RenderOptions): string[] {
  return [
    'template',
    options.release ?? release,
    chartDir,
    '--namespace',
    options.namespace ?? namespace,
    '--values',
    '-',
    ...(options.kubeVersion ? ['--kube-version', options.kubeVersion] : []),
    ...(options.apiVersions ?? []).flatMap((v) => ['--api-versions', v]),
  ];
}

/** Every object `helm template` renders with `values`. */
export async function render(
  values: Record<string, unknown> = {},
  options: RenderOptions = {},
): Promise<K8sObject[]> {
  const { stdout } = await runHelm(templateArgs(options), { input: stringify(values) });
  return parseAllDocuments(stdout)
    .map((doc) => {
      if (doc.errors.length > 0) throw doc.errors[0]!;
      return doc.toJS() as K8sObject | null;
    })
    .filter((o): o is K8sObject => o !== null);
}

/** helm's error text when it refuses to render `values`; throws when it renders them. */
export async function renderError(
  values: Record<string, unknown>,
  options: RenderOptions = {},
): Promise<string> {
  try {
    await runHelm(templateArgs(options), { input: stringify(values) });
  } catch (error) {
    if (error instanceof HelmError) return error.stderr;
    throw error;
  }
  throw new TypeError(`helm template rendered ${JSON.stringify(values)}; expected a refusal`);
}

/** The one object of this kind (and name, if given); fails naming what was rendered. */
export function only(objects: K8sObject[], kind: string, name?: string): K8sObject {
  const found = objects.filter((o) => o.kind === kind && (!name || o.metadata.name === name));
  if (found.length !== 1) {
    const rendered = objects.map((o) => `${o.kind}/${o.metadata.name}`).join(', ');
    throw new TypeError(`expected one ${kind}${name ? ` ${name}` : ''}; rendered: ${rendered}`);
  }
  return found[0]!;
}

/** The operator container of the Deployment. */
export function operatorContainer(objects: K8sObject[]): K8sObject {
  const containers = only(objects, 'Deployment', 'winfleet').spec.template.spec.containers;
  if (containers.length !== 1) throw new TypeError(`${containers.length} containers; expected 1`);
  return containers[0];
}
