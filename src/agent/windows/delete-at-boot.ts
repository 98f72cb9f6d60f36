/**
 * Deleting a file, or an empty directory, at the next boot: MoveFileEx with a NULL new name and
 * MOVEFILE_DELAY_UNTIL_REBOOT (0x4), which records the path in Session Manager's
 * PendingFileRenameOperations; the Session Manager deletes it early in the boot, before any
 * service starts (learn.microsoft.com, MoveFileExW). "If lpExistingFileName refers to a
 * directory, the system removes the directory at restart only if the directory is empty", and
 * only an administrator or LocalSystem may do it — the agent service runs as LocalSystem.
 *
 * It is how a program removes what it runs from: Windows will not delete the image of a
 * running process (the agent and its service shim, when the agent deconfigures its own host).
 * Only a real host proves the P/Invoke; the grammar test proves the script parses.
 */

import { WinfleetError } from '../../errors/catalog.ts';
import { powerShellScript, quotePowerShellString } from '../../powershell/powershell.ts';

/** MoveFileEx's MOVEFILE_DELAY_UNTIL_REBOOT. */
export const moveFileDelayUntilReboot = 0x4;

/** Throws unless `path` is an absolute Windows path MoveFileEx can take. */
function checkPath(path: string): void {
  if (!/^[A-Za-z]:\\[^\0]*$/.test(path) || path.length > 32_000) {
    throw new WinfleetError(
      'WF_INVARIANT',
      `Cannot delete "${path}" at the next boot: give an absolute Windows path such as C:\\k\\winfleet`,
    );
  }
}

/** The script that has Windows delete `path` at the next boot; it throws the Win32 error. */
export function deleteAtBootScript(path: string): string {
  checkPath(path);
  const signature =
    '[DllImport("kernel32.dll", SetLastError = true, CharSet = CharSet.Unicode)] public static extern bool MoveFileEx(string existingFileName, string newFileName, int flags);';
  return powerShellScript(
    `Add-Type -Namespace Winfleet -Name DeleteAtBoot -MemberDefinition ${quotePowerShellString(signature)}`,
    // $null would reach a .NET string parameter as String.Empty, not NULL (PowerShell's
    // argument conversion); [NullString]::Value is PowerShell's way to pass a null string
    // (learn.microsoft.com, System.Management.Automation.Language.NullString), so MoveFileEx
    // gets the NULL new name its contract names for "delete at reboot".
    `if (-not [Winfleet.DeleteAtBoot]::MoveFileEx(${quotePowerShellString(path)}, [System.Management.Automation.Language.NullString]::Value, ${moveFileDelayUntilReboot})) {`,
    '  throw (New-Object ComponentModel.Win32Exception ([Runtime.InteropServices.Marshal]::GetLastWin32Error()))',
    '}',
  );
}
