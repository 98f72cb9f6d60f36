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

export function watchConfig(
  factory: InformerFactory,
  namespace: string,
  events: EventRecorder,
  log: Logger,
): ConfigSource {
  let config = defaultConfig();
  let source = 'defaults';
  let problems: string[] | undefined;
  const listeners: ((c: WinfleetConfig) => void)[] = [];
  const informer = factory.get<k8s.V1ConfigMap>(resources.configMaps, {
    namespace,
    fieldSelector: `metadata.name=${configMapName}`,
  });
  const where = `ConfigMap ${namespace}/${configMapName}`;
  /** Reports what is wrong (log, and one Event per new set of problems); nothing changes. */
  const report = (cm: k8s.V1ConfigMap, reason: EventReason, what: string, next: string[]) => {
    const repeated = JSON.stringify(next) === JSON.stringify(problems);
    problems = next;
    const kept =
      source === 'defaults'
        ? 'The operator runs on the default configuration until this is fixed.'
        : 'The previous configuration stays in force until this is fixed.';
    log.error(`${what}; ${kept}`, { problems });
    if (repeated) return;
    events.record(
      { ...cm, apiVersion: 'v1', kind: 'ConfigMap' },
      'Warning',
      reason,
      `${what[0]!.toUpperCase()}${what.slice(1)}:\n${problems.map((p) => `  - ${p}`).join('\n')}\n${kept}`,
    );
  };
  const apply = (cm: k8s.V1ConfigMap) => {
    const text = cm.data?.[configKey];
    if (text === undefined) {
      report(cm, EventReason.MissingConfig, `${where} has no key ${configKey}`, [
        missingKeyProblem(cm),
      ]);
      return;
    }
    try {
      const next = parseConfig(text, `${where} key ${configKey}`, cm.data?.[caBundleKey]);
      problems = undefined;
      source = `${namespace}/${configMapName}`;
      if (JSON.stringify(next) === JSON.stringify(config)) return;
      config = next;
      log.info('configuration in force', { source });
    } catch (error) {
      report(
        cm,
        EventReason.InvalidConfig,
        `invalid configuration in ${where} key ${configKey}`,
        isDocumentError(error, 'WF_CONFIG_INVALID')
          ? error.details.problems
          : [`(top level): cannot be read: ${(error as Error)?.message ?? error}`],
      );
      return;
    }
    for (const listener of listeners) {
      try {
        listener(config);
      } catch (error) {
        log.error('applying the new configuration failed', { error });
      }
    }
  };
  const deleted = (cm: k8s.V1ConfigMap) =>
    report(cm, EventReason.MissingConfig, `${where} was deleted`, [
      `(top level): the ConfigMap was deleted; create it again (an empty ${configKey} means the defaults)`,
    ]);
  informer
    .on('add', apply)
    .on('update', (cm) => apply(cm))
    .on('delete', deleted);
  return {
    current: () => config,
    onChange: (listener) => listeners.push(listener),
    problems: () => problems,
    source: () => source,
  };
}

/**
 * The status server's `/config` route: whether the ConfigMap is valid, where the configuration
 * in force came from, and the problems of an invalid ConfigMap (never the configuration itself).
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
