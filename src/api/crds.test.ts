/** `kubectl explain windowshost` has something to say about every field. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { winfleetCrds } from './crds.ts';

interface Schema {
  description?: string;
  properties?: Record<string, Schema>;
  items?: Schema;
  additionalProperties?: Schema | boolean;
}

/** The paths of fields (named properties, at any depth) that have no description. */
function undescribed(schema: Schema, path: string): string[] {
  const missing: string[] = [];
  for (const [name, field] of Object.entries(schema.properties ?? {})) {
    const at = `${path}.${name}`;
    // The API server describes metadata itself and refuses a description of it in a CRD.
    if (at.split('.').length === 2 && name === 'metadata') continue;
    if (!field.description?.trim()) missing.push(at);
    missing.push(...undescribed(field, at));
  }
  if (schema.items) missing.push(...undescribed(schema.items, `${path}[]`));
  if (typeof schema.additionalProperties === 'object') {
    missing.push(...undescribed(schema.additionalProperties, `${path}{}`));
  }
  return missing;
}

test('every field of every CRD version has a description', () => {
  for (const crd of winfleetCrds) {
    for (const version of crd.spec.versions) {
      const root = version.schema?.openAPIV3Schema as Schema;
      assert.ok(root.description, `${crd.metadata?.name} ${version.name} has no description`);
      assert.deepEqual(
        { ...root.properties?.metadata },
        { type: 'object' },
        'the API server allows no more',
      );
      assert.deepEqual(undescribed(root, crd.spec.names.kind), [], 'fields without a description');
    }
  }
});

test('the walk finds a field without a description', () => {
  assert.deepEqual(
    undescribed({ properties: { a: { description: 'x', items: { properties: { b: {} } } } } }, 'K'),
    ['K.a[].b'],
  );
});
