/**
 * The join script as EC2 user data for EC2Launch v2 (Windows Server 2022 and later AMIs;
 * EC2Launch v1 reads the same tags): the script between `<powershell>` and `</powershell>`,
 * which the launch agent runs once, at the instance's first boot, as LocalSystem
 * (docs.aws.amazon.com/AWSEC2/latest/UserGuide/user-data.html, ec2-windows-user-data.html; no
 * `<persist>`, so a reboot does not run it again). EC2 limits user data to 16 KB before
 * base64, which join-script-core's output stays well under (tested).
 */
import { type JoinScriptValues, joinScriptLines } from './join-script-core.ts';

/** @package */
export function awsJoinUserData(values: JoinScriptValues): string {
  return `<powershell>\n${joinScriptLines(values).join('\n')}\n</powershell>\n`;
}
