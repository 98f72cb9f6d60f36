/**
 * `renderJoinScript(format, values)`: the join script `winfleet join-command --format` prints,
 * one file per format beside this one, all from join-script-core.ts.
 */
import { WinfleetError } from '../../errors/catalog.ts';
import { awsJoinUserData } from './aws.ts';
import { azureJoinCustomData } from './azure.ts';
import { cloudbaseInitJoinUserData } from './cloudbase-init.ts';
import type { JoinScriptValues } from './join-script-core.ts';
import { powerShellJoinScript } from './powershell.ts';

export type { JoinScriptValues } from './join-script-core.ts';

const renderers = {
  powershell: powerShellJoinScript,
  aws: awsJoinUserData,
  azure: azureJoinCustomData,
  'cloudbase-init': cloudbaseInitJoinUserData,
} as const satisfies Record<string, (values: JoinScriptValues) => string>;

export type JoinScriptFormat = keyof typeof renderers;
export const joinScriptFormats = Object.keys(renderers) as JoinScriptFormat[];

/** EC2's user-data limit (16 KB before base64); every format stays under it. */
export const userDataLimitBytes = 16 * 1024;

/** The join script in `format`; throws WF_JOIN_SCRIPT_INVALID for a bad format or value. */
export function renderJoinScript(format: JoinScriptFormat, values: JoinScriptValues): string {
  const render = (renderers as Record<string, (values: JoinScriptValues) => string>)[format];
  if (!render) {
    throw new WinfleetError(
      'WF_JOIN_SCRIPT_INVALID',
      `Cannot write a join script in format ${JSON.stringify(format)}; use one of ${joinScriptFormats.join(', ')}`,
    );
  }
  return render(values);
}
