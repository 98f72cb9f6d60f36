/**
 * The chart's generated parts stay what the TypeScript definitions say: the CRD template is
 * src/api/crds.ts as the operator's client sends it (x-kubernetes-* keys included), behind
 * crds.install and kept on uninstall; the `config` schema is config.yaml's own.
 */
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { test } from 'node:test';
import {
  configValuesSchema,
  crdsTemplate,
  crdsTemplatePath,
  valuesSchemaPath,
  valuesSchemaText,
  wireCrd,
} from '../../../scripts/generate-chart-files.ts';
import { winfleetCrds } from '../../../src/api/crds.ts';
import { render } from './render.ts';

const fix = 'run `npm run chart:generate` and commit the result';

test('templates/crds.yaml is generated from src/api/crds.ts', async () => {
  assert.equal(
    await readFile(crdsTemplatePath, 'utf8'),
    crdsTemplate(),
    `crds.yaml drifted: ${fix}`,
  );
});

test('values.schema.json’s config schema is generated from src/config/winfleet-config.ts', async () => {
  assert.equal(
    await readFile(valuesSchemaPath, 'utf8'),
    await valuesSchemaText(),
    `values.schema.json drifted: ${fix}`,
  );
  const schema = JSON.parse(await readFile(valuesSchemaPath, 'utf8'));
  assert.deepEqual(schema.properties.config, configValuesSchema());
});

test('the rendered CRDs equal what the operator installs, x-kubernetes keys included, with the keep policy', async () => {
  const objects = await render();
  const crds = objects.filter((o) => o.kind === 'CustomResourceDefinition');
  assert.equal(crds.length, winfleetCrds.length);
  for (const crd of winfleetCrds) {
    const rendered = crds.find((o) => o.metadata.name === crd.metadata?.name);
    assert.ok(rendered, `CRD ${crd.metadata?.name} is rendered`);
    assert.deepEqual(rendered.spec, wireCrd(crd).spec);
    assert.equal(rendered.metadata.annotations?.['helm.sh/resource-policy'], 'keep');
  }
  const text = JSON.stringify(crds);
  for (const key of [
    'x-kubernetes-list-type',
    'x-kubernetes-list-map-keys',
    'x-kubernetes-validations',
  ]) {
    assert.ok(text.includes(`"${key}"`), `${key} survives`);
  }
  assert.ok(!text.includes('x_kubernetes'), 'no client-model field names');
});

test('crds.install=false renders no CRD', async () => {
  const objects = await render({ crds: { install: false } });
  assert.equal(objects.filter((o) => o.kind === 'CustomResourceDefinition').length, 0);
  assert.ok(objects.some((o) => o.kind === 'Deployment'));
});
