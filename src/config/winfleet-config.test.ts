import assert from 'node:assert/strict';
import { test } from 'node:test';
import { hasCode } from '../errors/catalog.ts';
import { isDocumentError } from '../schema/validator.ts';
import { defaultConfig, parseConfig } from './winfleet-config.ts';

test('an empty document yields the documented defaults', () => {
  const config = defaultConfig();
  assert.deepEqual(config.placement.windowsTaint, {
    key: 'os',
    value: 'windows',
    effect: 'NoSchedule',
  });
  assert.equal(config.placement.linuxTaint.enabled, false);
  assert.equal(config.images.compatibility, 'warn');
  assert.equal(config.webhook.validationFailurePolicy, 'Ignore');
  assert.ok(config.webhook.timeoutSeconds <= 5);
  assert.equal(config.runtimeClasses.handler, 'runhcs-wcow-process');
});

test('the Anthos taint form and a registry mirror are accepted', () => {
  const config = parseConfig(`
placement:
  windowsTaint: { key: node.kubernetes.io/os, value: windows, effect: NoSchedule }
images:
  compatibility: enforce
  mirrors:
    mcr.microsoft.com:
      - endpoint: http://127.0.0.1:5000
        insecure: true
`);
  assert.equal(config.placement.windowsTaint.key, 'node.kubernetes.io/os');
  assert.equal(config.images.mirrors['mcr.microsoft.com']?.[0]?.endpoint, 'http://127.0.0.1:5000');
  assert.equal(config.images.compatibility, 'enforce');
});

test('every problem is reported with its field and the fix', () => {
  assert.throws(
    () =>
      parseConfig(`
placement:
  windowsTaint: { key: os, value: windows, effect: NoScheduel }
webhook:
  timeoutSeconds: 30
images:
  compatability: enforce
  mirrors:
    mcr.microsoft.com:
      - endpoint: 127.0.0.1:5000
`),
    (error: unknown) => {
      assert.ok(isDocumentError(error, 'WF_CONFIG_INVALID'));
      const text = error.details.problems.join('\n');
      assert.match(
        text,
        /placement\.windowsTaint\.effect: must be one of "NoSchedule", "PreferNoSchedule", "NoExecute"/,
      );
      assert.match(text, /webhook\.timeoutSeconds: must be ≤ 5/);
      assert.match(text, /images\.compatability: unknown field; remove it or check its spelling/);
      assert.match(
        text,
        /images\.mirrors\.mcr\.microsoft\.com\.0\.endpoint: "127\.0\.0\.1:5000" does not match/,
      );
      return true;
    },
  );
});

test('YAML that is not a mapping, or not YAML, is refused clearly', () => {
  assert.throws(
    () => parseConfig('- a\n- b'),
    (e: unknown) =>
      hasCode(e, 'WF_CONFIG_INVALID') && /must be a mapping of sections/.test(String(e)),
  );
  assert.throws(
    () => parseConfig('placement: [unclosed'),
    (e: unknown) => hasCode(e, 'WF_CONFIG_INVALID') && /not valid YAML/.test(String(e)),
  );
});
