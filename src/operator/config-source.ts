/**
 * The live operator configuration: the ConfigMap winfleet-config (key config.yaml) in the
 * operator's namespace, watched. An invalid edit is reported (log and Event, naming each
 * field) and the last valid configuration stays in force, so a typo never half-applies; an
 * operator that starts with an invalid ConfigMap runs on the defaults and reports the same
 * way. Nothing here throws into the informer: a bad configuration never stops the operator
 * (and the CSR approver with it). Problems never quote credentials (the parse redacts them).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type * as k8s from '@kubernetes/client-node';
import { EventReason } from '../api/reasons.ts';
import { defaultConfig, parseConfig, type WinfleetConfig } from '../config/winfleet-config.ts';
import type { EventRecorder } from '../controller/events.ts';
import type { InformerFactory } from '../controller/informer-factory.ts';
import { resources } from '../controller/informer-factory.ts';
import type { Logger } from '../log/logger.ts';
import { isDocumentError } from '../schema/validator.ts';

export const configMapName = 'winfleet-config';
export const configKey = 'config.yaml';

export interface ConfigSource {
  current(): WinfleetConfig;
  /** Called after a new valid configuration is in force. */
  onChange(listener: (config: WinfleetConfig) => void): void;
  /** The problems of the last invalid edit, if the ConfigMap is invalid now. */
  problems(): string[] | undefined;
  /** Where the configuration in force came from: "defaults" or "<namespace>/winfleet-config". */
  source(): string;
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
  const apply = (cm: k8s.V1ConfigMap | undefined) => {
    const text = cm?.data?.[configKey] ?? '';
    try {
      const next = parseConfig(text, `ConfigMap ${namespace}/${configMapName} key ${configKey}`);
      problems = undefined;
      source = cm ? `${namespace}/${configMapName}` : 'defaults';
      if (JSON.stringify(next) === JSON.stringify(config)) return;
      config = next;
      log.info('configuration in force', { source });
    } catch (error) {
      problems = isDocumentError(error, 'WF_CONFIG_INVALID')
        ? error.details.problems
        : [`(top level): cannot be read: ${(error as Error)?.message ?? error}`];
      const kept =
        source === 'defaults'
          ? 'The operator runs on the default configuration until this is fixed.'
          : 'The previous configuration stays in force until this is fixed.';
      log.error(`invalid configuration; ${kept}`, { problems });
      if (cm) {
        events.record(
          { ...cm, apiVersion: 'v1', kind: 'ConfigMap' },
          'Warning',
          EventReason.InvalidConfig,
          `Invalid ConfigMap ${namespace}/${configMapName} key ${configKey}:\n${problems.map((p) => `  - ${p}`).join('\n')}\n${kept}`,
        );
      }
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
  informer
    .on('add', apply)
    .on('update', (cm) => apply(cm))
    .on('delete', () => apply(undefined));
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
