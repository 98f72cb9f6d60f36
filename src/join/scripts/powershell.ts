/**
 * The plain PowerShell join script: pasted into an elevated Windows PowerShell 5.1 session, or
 * saved as a .ps1 and run by whatever provisions the host.
 */
import { type JoinScriptValues, joinScriptLines } from './join-script-core.ts';

export function powerShellJoinScript(values: JoinScriptValues): string {
  return `${joinScriptLines(values).join('\n')}\n`;
}
