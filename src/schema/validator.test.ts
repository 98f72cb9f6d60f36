import assert from 'node:assert/strict';
import { test } from 'node:test';
import { hasCode } from '../errors/catalog.ts';
import { compileSchema, invalidDocument, isDocumentError } from './validator.ts';

const schema = {
  type: 'object',
  additionalProperties: false,
  required: ['name'],
  properties: {
    name: { type: 'string', pattern: '^[a-z]+$' },
    port: { type: 'integer', minimum: 1, maximum: 65535, default: 443 },
    mode: { enum: ['warn', 'enforce'] },
  },
} as const;

const validate = compileSchema<{ name: string; port: number }>(schema, {
  code: 'WF_SCHEMA_INVALID',
  document: 'test.json',
});

test('a valid document comes back as a copy with defaults filled in', () => {
  const input = { name: 'web' };
  const output = validate(input);
  assert.deepEqual(output, { name: 'web', port: 443 });
  assert.deepEqual(input, { name: 'web' }, 'the caller’s value is not changed');
});

test('every problem is listed with its field, under the caller’s code', () => {
  assert.throws(
    () => validate({ name: 'Web', port: 0, mode: 'block', extra: true }),
    (error: unknown) => {
      assert.ok(isDocumentError(error, 'WF_SCHEMA_INVALID'));
      assert.deepEqual(error.details.problems.toSorted(), [
        'extra: unknown field; remove it or check its spelling',
        'mode: must be one of "warn", "enforce"',
        'name: "Web" does not match ^[a-z]+$',
        'port: must be ≥ 1',
      ]);
      assert.match(error.message, /^Invalid test\.json:\n {2}- /);
      for (const problem of error.details.problems) assert.ok(error.message.includes(problem));
      return true;
    },
  );
  assert.throws(() => validate({}), {
    code: 'WF_SCHEMA_INVALID',
    message: 'Invalid test.json:\n  - (top level): missing required field "name"',
  });
});

test('a call may name the document it checks', () => {
  assert.throws(
    () => validate([], 'C:\\k\\other.json'),
    /^WinfleetError: Invalid C:\\k\\other\.json:/,
  );
});

test('invalidDocument reports problems found outside the schema the same way', () => {
  const error = invalidDocument('WF_MANIFEST_INVALID', 'services manifest', ['services: cycle']);
  assert.ok(hasCode(error, 'WF_MANIFEST_INVALID'));
  assert.equal(error.message, 'Invalid services manifest:\n  - services: cycle');
  assert.ok(isDocumentError(error, 'WF_MANIFEST_INVALID'));
  assert.ok(!isDocumentError(error, 'WF_CONFIG_INVALID'));
});
