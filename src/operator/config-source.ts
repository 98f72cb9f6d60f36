/**
 * The live operator configuration: the ConfigMap winfleet-config (key config.yaml, and key
 * ca-bundle.crt for the CAs the nodes trust) in the operator's namespace, watched. An invalid edit is reported (log and Event, naming each
 * field) and the last valid configuration stays in force, so a typo never half-applies; an
 * operator that starts with an invalid ConfigMap runs on the defaults and reports the same
 * way. A ConfigMap without the config.yaml key (renamed to config.yml, say) or a deleted one
 * is a mistake to report the same way, never a silent return to the defaults: the user who
 * wants the defaults writes an empty config.yaml. Nothing here throws into the informer: a bad
 * configuration never stops the operator (and the CSR approver with it). Problems never quote
 * credentials (the parse redacts them).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type * as k8s from '@kubernetes/client-node';
import { EventReason } from '../api/reasons.ts';
import { defaultConfig, parseConfig, type WinfleetConfig } from '../config/winfleet-config.ts';
import type { EventRecorder } from '../controller-runtime/events.ts';
import type { InformerFactory } from '../controller-runtime/informer-factory.ts';
import { resources } from '../controller-runtime/informer-factory.ts';
import type { Logger } from '../log/logger.ts';
import { caBundleKey } from '../pki/trusted-ca-bundle.ts';
import { isDocumentError } from '../schema/validator.ts';

export const configMapName = 'winfleet-config';
export const configKey = 'config.yaml';

/** @package */
export interface ConfigSource {
  current(): WinfleetConfig;
  /** Called after a new valid configuration is in force. */
  onChange(listener: (config: WinfleetConfig) => void): void;
  /** What is wrong with the ConfigMap now (invalid, without its key, deleted), if anything. */
  problems(): string[] | undefined;
  /** Where the configuration in force came from: "defaults" or "<namespace>/winfleet-config". */
  source(): string;
}

/**
 * Why a ConfigMap without the config.yaml key is one, suggesting the key the user most likely
 * meant (config.yml, config.json, Config.yaml…) when it is there.
 * @package
 */
export function missingKeyProblem(cm: k8s.V1ConfigMap): string {
  const keys = [...Object.keys(cm.data ?? {}), ...Object.keys(cm.binaryData ?? {})];
  const nearMiss =
    keys.find((k) => /^config\.(ya?ml|json)$/i.test(k.trim())) ??
    keys.find((k) => /\.(ya?ml|json)$/i.test(k));
  const has = keys.length > 0 ? `it has ${keys.map((k) => `"${k}"`).join(', ')}` : 'it has no keys';
  const fix = nearMiss
    ? `rename key "${nearMiss}" to "${configKey}"`
    : `put the configuration under key "${configKey}" (an empty value means the defaults)`;
  return `(top level): the ConfigMap has no key "${configKey}" (${has}); ${fix}`;
}

/** What the configuration watch keeps: the configuration in force, its source, its problems. */
export interface ConfigWatchState {
  namespace: string;
  /** "ConfigMap <namespace>/winfleet-config", as messages name it. */
  where: string;
  events: EventRecorder;
  log: Logger;
  config: WinfleetConfig;
  /** "defaults" or "<namespace>/winfleet-config". */
  source: string;
  problems: string[] | undefined;
  listeners: ((c: WinfleetConfig) => void)[];
}

/** Reports what is wrong (log, and one Event per new set of problems); nothing changes. */
function reportConfigProblems(
  state: ConfigWatchState,
  cm: k8s.V1ConfigMap,
  reason: EventReason,
  what: string,
  next: string[],
): void {
  const repeated = JSON.stringify(next) === JSON.stringify(state.problems);
  state.problems = next;
  const problems = next;
  const kept =
    state.source === 'defaults'
      ? 'The operator runs on the default configuration until this is fixed.'
      : 'The previous configuration stays in force until this is fixed.';
  state.log.error(`${what}; ${kept}`, { problems });
  if (repeated) return;
  state.events.record(
    { ...cm, apiVersion: 'v1', kind: 'ConfigMap' },
    'Warning',
    reason,
    `${what[0]!.toUpperCase()}${what.slice(1)}:\n${problems.map((p) => `  - ${p}`).join('\n')}\n${kept}`,
  );
}

/**
 * One version of the ConfigMap: a valid one is put in force (and the listeners told when it
 * changed anything); a missing key or an invalid one is reported and changes nothing.
 * @package
 */
export function applyConfigMap(state: ConfigWatchState, cm: k8s.V1ConfigMap): void {
  const { where } = state;
  const text = cm.data?.[configKey];
  if (text === undefined) {
    reportConfigProblems(state, cm, EventReason.MissingConfig, `${where} has no key ${configKey}`, [
      missingKeyProblem(cm),
    ]);
    return;
  }
  try {
    const next = parseConfig(text, `${where} key ${configKey}`, cm.data?.[caBundleKey]);
    state.problems = undefined;
    state.source = `${state.namespace}/${configMapName}`;
    if (JSON.stringify(next) === JSON.stringify(state.config)) return;
    state.config = next;
    state.log.info('configuration in force', { source: state.source });
  } catch (error) {
    reportConfigProblems(
      state,
      cm,
      EventReason.InvalidConfig,
      `invalid configuration in ${where} key ${configKey}`,
      isDocumentError(error, 'WF_CONFIG_INVALID')
        ? error.details.problems
        : [`(top level): cannot be read: ${(error as Error)?.message ?? error}`],
    );
    return;
  }
  for (const listener of state.listeners) {
    try {
      listener(state.config);
    } catch (error) {
      state.log.error('applying the new configuration failed', { error });
    }
  }
}

/** The ConfigMap was deleted: reported, and the configuration in force stays. */
export function configMapDeleted(state: ConfigWatchState, cm: k8s.V1ConfigMap): void {
  reportConfigProblems(state, cm, EventReason.MissingConfig, `${state.where} was deleted`, [
    `(top level): the ConfigMap was deleted; create it again (an empty ${configKey} means the defaults)`,
  ]);
}

/** The state of a configuration watch before the first ConfigMap: the defaults. */
export function initialConfigWatchState(
  namespace: string,
  events: EventRecorder,
  log: Logger,
): ConfigWatchState {
  return {
    namespace,
    where: `ConfigMap ${namespace}/${configMapName}`,
    events,
    log,
    config: defaultConfig(),
    source: 'defaults',
    problems: undefined,
    listeners: [],
  };
}

/** Watches winfleet-config in `namespace` (the wiring: the informer's events to the state). */
export function watchConfig(
  factory: InformerFactory,
  namespace: string,
  events: EventRecorder,
  log: Logger,
): ConfigSource {
  const state = initialConfigWatchState(namespace, events, log);
  const informer = factory.get<k8s.V1ConfigMap>(resources.configMaps, {
    namespace,
    fieldSelector: `metadata.name=${configMapName}`,
  });
  informer
    .on('add', (cm) => applyConfigMap(state, cm))
    .on('update', (cm) => applyConfigMap(state, cm))
    .on('delete', (cm) => configMapDeleted(state, cm));
  return {
    current: () => state.config,
    onChange: (listener) => state.listeners.push(listener),
    problems: () => state.problems,
    source: () => state.source,
  };
}

/**
 * The status server's `/config` route: whether the ConfigMap is valid, where the configuration
 * in force came from, and the problems of an invalid ConfigMap (never the configuration itself).
 * @package
 */
export function configStatusRoute(
  config: ConfigSource,
): (req: IncomingMessage, res: ServerResponse) => boolean {
  return function configStatus(req, res) {
    if ((req.url ?? '/').split('?')[0] !== '/config') return false;
    const problems = config.problems();
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(
      JSON.stringify({
        valid: problems === undefined,
        inForce: config.source(),
        ...(problems ? { problems } : {}),
      }),
    );
    return true;
  };
}
