/**
 * The join script as user data for cloudbase-init (OpenStack, and other clouds' Windows images
 * that use it): a first line `#ps1_sysnative` makes its UserDataPlugin run the rest with the
 * 64-bit Windows PowerShell (cloudbase-init docs, "Userdata": PowerShell). cloudbase-init runs
 * user data once per instance; exit codes 1001 to 1003 ask it to reboot or run the plugin again,
 * and the script never uses them (0 or 1 only).
 */
import { type JoinScriptValues, joinScriptLines } from './join-script-core.ts';

/** @package */
export function cloudbaseInitJoinUserData(values: JoinScriptValues): string {
  return `#ps1_sysnative\n${joinScriptLines(values).join('\n')}\n`;
}
