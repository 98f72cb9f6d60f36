/**
 * The join script as Azure custom data. Azure does not run custom data on Windows: it only
 * saves it as %SYSTEMDRIVE%\AzureData\CustomData.bin (learn.microsoft.com/azure/virtual-machines/
 * custom-data, "Windows ... it isn't processed"). What runs it is the Custom Script Extension,
 * whose commandToExecute (given in the comment below) copies the file to a .ps1 and runs it, as
 * AKS Engine did for its Windows nodes. Images that run cloudbase-init (with its Azure metadata
 * service) take the cloudbase-init format instead. The custom data is the plain script, so
 * what the extension runs is exactly the script `winfleet join-command` printed. The command
 * deletes CustomData.bin before the run and the .ps1 after it (the script deletes itself too),
 * so no file on the VM holds the token once the join ran, whatever its outcome.
 */
import { type JoinScriptValues, joinScriptLines } from './join-script-core.ts';

/** The Custom Script Extension's commandToExecute that runs the custom data. */
export const azureCommandToExecute =
  'powershell.exe -NoProfile -ExecutionPolicy Bypass -Command "Copy-Item -LiteralPath C:\\AzureData\\CustomData.bin -Destination C:\\AzureData\\winfleet-join.ps1 -Force; Remove-Item -LiteralPath C:\\AzureData\\CustomData.bin -Force; & C:\\AzureData\\winfleet-join.ps1; $code = $LASTEXITCODE; Remove-Item -LiteralPath C:\\AzureData\\winfleet-join.ps1 -Force -ErrorAction SilentlyContinue; exit $code"';

/** @package */
export function azureJoinCustomData(values: JoinScriptValues): string {
  const lines = joinScriptLines(values);
  return `${[
    '# Azure custom data: Windows saves it as C:\\AzureData\\CustomData.bin and does not run it.',
    '# Run it with the Custom Script Extension (put the command in protectedSettings), commandToExecute:',
    `# ${azureCommandToExecute}`,
    ...lines,
  ].join('\n')}\n`;
}
