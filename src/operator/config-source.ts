/**
 * The live operator configuration: the ConfigMap winfleet-config (key config.yaml) in the
 * operator's namespace, watched. An invalid edit is reported (log and Event, naming each
 * field) and the last valid configuration stays in force, so a typo never half-applies.
 */
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
}

export function watchConfig(
  factory: InformerFactory,
  namespace: string,
  events: EventRecorder,
  log: Logger,
): ConfigSource {
  let config = defaultConfig();
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
      if (JSON.stringify(next) === JSON.stringify(config)) return;
      config = next;
      log.info('configuration in force', {
        source: cm ? `${namespace}/${configMapName}` : 'defaults',
      });
      for (const listener of listeners) listener(config);
    } catch (error) {
      if (!isDocumentError(error, 'WF_CONFIG_INVALID')) throw error;
      problems = error.details.problems;
      log.error('invalid configuration; keeping the previous one', { problems });
      if (cm) {
        events.record(
          { ...cm, apiVersion: 'v1', kind: 'ConfigMap' },
          'Warning',
          EventReason.InvalidConfig,
          `${error.message}\nThe previous configuration stays in force until this is fixed.`,
        );
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
  };
}
