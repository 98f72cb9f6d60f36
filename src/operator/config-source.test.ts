/**
 * The live configuration (config-source.ts): the report for a ConfigMap without its
 * config.yaml key, and what watchConfig does with each state of the ConfigMap its informer
 * delivers. The informer is the operator's own, fed the watch events directly (it is never
 * started); Events are recorded in a list and the log is the operator's JSON logger writing to
 * one. That the operator process wires these to the status server, the webhook's routing and
 * the API server's Events is config-source.e2e.test.ts.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type * as k8s from '@kubernetes/client-node';
import { stringify } from 'yaml';
import { unusedKubeConfig } from '../../sim/testkit/synthetic-nodes.ts';
import { EventReason } from '../api/reasons.ts';
import { defaultConfig, type WinfleetConfig } from '../config/winfleet-config.ts';
import type { EventSubject, EventType } from '../controller-runtime/events.ts';
import { InformerFactory, resources } from '../controller-runtime/informer-factory.ts';
import { createLogger, silentLogger } from '../log/logger.ts';
import {
  applyConfigMap,
  configMapDeleted,
  configMapName,
  initialConfigWatchState,
  missingKeyProblem,
  watchConfig,
} from './config-source.ts';

test('a near-miss key is named with the rename that fixes it', () => {
  for (const key of ['config.yml', 'config.json', 'Config.yaml', 'config.yaml ']) {
    assert.match(
      missingKeyProblem({ data: { [key]: 'images: {}' } }),
      new RegExp(`rename key "${key.replace('.', '\\.')}" to "config\\.yaml"`),
    );
  }
  assert.match(
    missingKeyProblem({ data: { 'winfleet.yaml': '' } }),
    /has "winfleet\.yaml"\); rename key "winfleet\.yaml" to "config\.yaml"/,
  );
});

test('without a near miss the report says where the configuration goes', () => {
  assert.match(
    missingKeyProblem({ data: { notes: 'x' } }),
    /no key "config\.yaml" \(it has "notes"\); put the configuration under key "config\.yaml"/,
  );
  assert.match(missingKeyProblem({}), /it has no keys/);
});

const namespace = 'winfleet-cfg-1a2b3c';
const inForce = `${namespace}/${configMapName}`;
const secret = 'cfg-secret-5d81e0';
/** Mirrors the resolver cannot use: one endpoint carrying credentials, one plain HTTP. */
const badConfig = `images:
  mirrors:
    mcr.microsoft.com:
      - endpoint: https://cfg-user:${secret}@mirror.example.com
      - endpoint: http://bad-mirror.invalid
`;
const goodConfig = stringify({
  images: {
    mirrors: { 'mcr.microsoft.com': [{ endpoint: 'https://good-mirror.invalid' }] },
    fallbackToUpstream: false,
  },
});

interface Recorded {
  subject: EventSubject;
  type: EventType;
  reason: string;
  message: string;
}

/** watchConfig over an informer fed by the test, its Events, log lines and announcements. */
function watched() {
  const factory = new InformerFactory(unusedKubeConfig(), silentLogger);
  const events: Recorded[] = [];
  const lines: string[] = [];
  const source = watchConfig(
    factory,
    namespace,
    { record: (subject, type, reason, message) => events.push({ subject, type, reason, message }) },
    createLogger({ level: 'debug', write: (line) => lines.push(line) }),
  );
  const changes: WinfleetConfig[] = [];
  source.onChange((config) => changes.push(config));
  // The informer watchConfig asked the factory for (the factory hands out one per selector).
  const informer = factory.get<k8s.V1ConfigMap>(resources.configMaps, {
    namespace,
    fieldSelector: `metadata.name=${configMapName}`,
  });
  let resourceVersion = 0;
  const configMap = (data: Record<string, string>): k8s.V1ConfigMap => ({
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: configMapName, namespace, resourceVersion: String(++resourceVersion) },
    data,
  });
  return {
    source,
    events,
    lines,
    changes,
    /** The ConfigMap written (created or replaced) with `data`. */
    write: (data: Record<string, string>) =>
      informer.apply(informer.size === 0 ? 'ADDED' : 'MODIFIED', configMap(data)),
    remove: () => informer.apply('DELETED', configMap({})),
  };
}

/** Where the configuration in force sends mcr.microsoft.com. */
const mcrMirrors = (config: WinfleetConfig) =>
  config.images.mirrors['mcr.microsoft.com']?.map((m) => m.endpoint);

test('an invalid ConfigMap at start: the defaults stay in force, each bad field is reported once, no credential quoted', () => {
  const { source, events, lines, changes, write } = watched();
  write({ 'config.yaml': badConfig });
  assert.equal(source.source(), 'defaults');
  assert.deepEqual(source.current(), defaultConfig(), 'the defaults');
  assert.deepEqual(changes, []);
  const text = source.problems()!.join('\n');
  assert.match(
    text,
    /images\.mirrors\["mcr\.microsoft\.com"\]\[0\]\.endpoint "https:\/\/\*\*\*@mirror\.example\.com" must not carry credentials/,
  );
  assert.match(
    text,
    /images\.mirrors\["mcr\.microsoft\.com"\]\[1\]\.endpoint "http:\/\/bad-mirror\.invalid" uses plain HTTP; set insecure: true/,
  );
  assert.equal(events.length, 1);
  const [event] = events;
  assert.deepEqual(
    [event!.type, event!.reason, event!.subject.kind, event!.subject.metadata?.name],
    ['Warning', EventReason.InvalidConfig, 'ConfigMap', configMapName],
  );
  assert.match(event!.message, /\[1\]\.endpoint "http:\/\/bad-mirror\.invalid"/);
  assert.match(event!.message, /runs on the default configuration/);
  // The same problems again (a resync, an unrelated edit): logged, but no second Event.
  write({ 'config.yaml': badConfig });
  assert.equal(events.length, 1);
  const log = lines.join('');
  assert.match(log, /invalid configuration/);
  for (const said of [log, ...events.map((e) => e.message), text]) {
    assert.ok(!said.includes(secret), said);
    assert.ok(!said.includes('cfg-user'), said);
  }
});

test('a bad edit while running keeps the configuration in force, reported; a good one is applied and announced', () => {
  const { source, events, changes, write } = watched();
  write({ 'config.yaml': goodConfig });
  assert.equal(source.problems(), undefined);
  assert.equal(source.source(), inForce);
  assert.deepEqual(mcrMirrors(source.current()), ['https://good-mirror.invalid']);
  assert.equal(changes.length, 1, 'announced to the webhook’s routing');
  assert.equal(changes[0], source.current());

  write({ 'config.yaml': badConfig });
  assert.ok(source.problems(), 'reported');
  assert.equal(source.source(), inForce);
  assert.deepEqual(mcrMirrors(source.current()), ['https://good-mirror.invalid']);
  assert.equal(changes.length, 1, 'nothing announced: the routing stays');
  assert.equal(events.at(-1)?.reason, EventReason.InvalidConfig);
  assert.match(events.at(-1)!.message, /previous configuration stays in force/);
  assert.ok(!events.at(-1)!.message.includes(secret));
});

test('a renamed key or a deleted ConfigMap keeps the last good configuration, reported', () => {
  const { source, events, lines, changes, write, remove } = watched();
  write({ 'config.yaml': goodConfig });
  assert.equal(source.problems(), undefined, 'the good configuration valid');
  const good = source.current();
  const missingEvents = (pattern: RegExp) =>
    events.find(
      (e) =>
        e.reason === EventReason.MissingConfig &&
        e.subject.metadata?.name === configMapName &&
        pattern.test(e.message),
    );

  // The key renamed to config.yml: a near miss, named in the fix.
  write({ 'config.yml': goodConfig });
  assert.match(source.problems()!.join('\n'), /rename key "config\.yml" to "config\.yaml"/);
  assert.equal(source.source(), inForce);
  const renamedEvent = missingEvents(/rename key "config\.yml"/);
  assert.ok(renamedEvent, 'the MissingConfig Event for the renamed key');
  assert.equal(renamedEvent.type, 'Warning');
  assert.match(renamedEvent.message, /previous configuration stays in force/);
  assert.equal(source.current(), good, 'the mirrors stay');
  assert.equal(changes.length, 1, 'nothing announced to the routing');

  // The ConfigMap deleted: the same.
  remove();
  assert.ok(source.problems()?.some((p) => /was deleted/.test(p)));
  assert.equal(source.source(), inForce);
  assert.ok(missingEvents(/was deleted/), 'the MissingConfig Event for the deletion');
  assert.equal(source.current(), good, 'the mirrors stay');
  assert.equal(changes.length, 1, 'nothing announced to the routing');
  const log = lines.join('');
  assert.match(log, /winfleet-config was deleted/);
  assert.match(log, /winfleet-config has no key config\.yaml/);

  write({ 'config.yaml': goodConfig });
  assert.equal(source.problems(), undefined, 'the recreated ConfigMap valid');
});

test('applyConfigMap over a stated watch state, no informer: valid in force, then invalid kept out', () => {
  const recorded: string[] = [];
  const state = initialConfigWatchState(
    namespace,
    { record: (_subject, _type, reason) => void recorded.push(reason) },
    silentLogger,
  );
  const told: WinfleetConfig[] = [];
  state.listeners.push((c) => told.push(c));
  const cm = (data: Record<string, string>): k8s.V1ConfigMap => ({
    metadata: { name: configMapName, namespace, uid: 'u1' },
    data,
  });
  applyConfigMap(state, cm({ 'config.yaml': goodConfig }));
  assert.equal(state.source, inForce);
  assert.equal(state.problems, undefined);
  assert.equal(told.length, 1);
  assert.equal(state.config.images.fallbackToUpstream, false);
  const inForceBefore = state.config;
  applyConfigMap(state, cm({ 'config.yaml': badConfig }));
  assert.equal(state.config, inForceBefore, 'the last valid configuration stays');
  const problems = state.problems as string[] | undefined;
  assert.ok(problems && problems.length > 0);
  assert.ok(!problems.join('\n').includes(secret), 'no credential in a problem');
  applyConfigMap(state, cm({ 'config.yaml': badConfig }));
  assert.deepEqual(recorded, [EventReason.InvalidConfig], 'one Event per new set of problems');
  configMapDeleted(state, cm({}));
  assert.deepEqual(recorded, [EventReason.InvalidConfig, EventReason.MissingConfig]);
  assert.equal(told.length, 1);
});
