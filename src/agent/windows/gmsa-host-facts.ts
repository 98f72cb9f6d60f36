/**
 * What a Windows host says about running gMSA containers (issue 16): whether it is joined to an
 * Active Directory domain, whether Container Credential Guard (CCG) is there, and which CCG
 * plug-ins are registered. The script that reads them and the strict parser of what it prints.
 *
 * Sources:
 * - Win32_ComputerSystem.PartOfDomain and .Domain (learn.microsoft.com/windows/win32/cimwin32prov/
 *   win32-computersystem): the AD domain, or the workgroup's name when not joined.
 * - "Create gMSAs for Windows containers" (learn.microsoft.com/virtualization/windowscontainers/
 *   manage-containers/manage-serviceaccounts): CCG (ccg.exe) exists from Windows Server 2019;
 *   a domain-joined host retrieves the gMSA password with its own identity, a host that is not
 *   joined needs a CCG plug-in and a portable identity.
 * - ICcgDomainAuthCredentials (learn.microsoft.com/windows/win32/api/ccgplugins/
 *   nn-ccgplugins-iccgdomainauthcredentials): a plug-in is an out-of-process COM class whose
 *   CLSID is a key under HKLM\SYSTEM\CurrentControlSet\Control\CCG\COMClasses; rancher/
 *   Rancher-Plugin-gMSA checks that key and HKEY_CLASSES_ROOT\CLSID\{clsid} both exist, and
 *   notes that the COMClasses key exists only where the Containers feature is installed.
 */
import { unprintable } from '../../api/windows-updates.ts';
import { type OutputReader, outputReader } from '../../powershell/output-reader.ts';
import { parsePowerShellJson, powerShellScript, writeJson } from '../../powershell/powershell.ts';

/** Where CCG plug-ins register their COM class id. */
export const ccgComClassesKey = 'HKLM:\\SYSTEM\\CurrentControlSet\\Control\\CCG\\COMClasses';
/** At most this many plug-ins are listed (a host has one or two). */
export const maxCcgPlugins = 16;

/** A CCG plug-in listed under ccgComClassesKey. */
export interface CcgPlugin {
  /** The COM class id, "{xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx}". */
  clsid: string;
  /** HKEY_CLASSES_ROOT\CLSID\{clsid} exists: CCG can activate it. */
  comClassRegistered: boolean;
}

export interface GmsaHostFacts {
  /** Win32_ComputerSystem.PartOfDomain. */
  partOfDomain: boolean;
  /** Win32_ComputerSystem.Domain: the AD domain, or the workgroup's name when not joined. */
  domain: string;
  /** ccg.exe is in System32 and the CCG COMClasses key exists (the Containers feature). */
  ccgAvailable: boolean;
  /** The plug-ins under ccgComClassesKey, at most maxCcgPlugins. */
  ccgPlugins: CcgPlugin[];
}

/**
 * Prints {"partOfDomain","domain","ccgExe","ccgKey","plugins":[{"clsid","comClassRegistered"}]}.
 * Reads only; every path is a literal.
 */
export function gmsaHostFactsScript(): string {
  return powerShellScript(
    '$cs = Get-CimInstance -ClassName Win32_ComputerSystem',
    "$ccgExe = Test-Path -LiteralPath (Join-Path $env:SystemRoot 'System32\\ccg.exe') -PathType Leaf",
    `$key = '${ccgComClassesKey}'`,
    '$ccgKey = Test-Path -LiteralPath $key',
    '$plugins = @()',
    'if ($ccgKey) {',
    `  $plugins = @(foreach ($k in (@(Get-ChildItem -LiteralPath $key) | Select-Object -First ${maxCcgPlugins})) {`,
    '    $clsid = [string]$k.PSChildName',
    '    [pscustomobject]@{',
    '      clsid = $clsid',
    "      comClassRegistered = [bool](Test-Path -LiteralPath ('Registry::HKEY_CLASSES_ROOT\\CLSID\\' + $clsid))",
    '    }',
    '  })',
    '}',
    writeJson(
      '@{ partOfDomain = [bool]$cs.PartOfDomain; domain = [string]$cs.Domain; ccgExe = [bool]$ccgExe; ccgKey = [bool]$ccgKey; plugins = $plugins }',
    ),
  );
}

const what = 'read the host’s gMSA facts (Win32_ComputerSystem, ccg.exe, CCG\\COMClasses)';
const reader: OutputReader = outputReader(what);
// Annotated, so that TypeScript narrows after a call that never returns.
const fail: OutputReader['fail'] = reader.fail;
const { exactKeys, bool } = reader;
const clsidPattern =
  /^\{[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}\}$/;

/** Reads what gmsaHostFactsScript printed; throws on anything else. */
export function parseGmsaHostFactsOutput(stdout: string): GmsaHostFacts {
  const r = exactKeys(parsePowerShellJson(stdout, what), 'the output', [
    'partOfDomain',
    'domain',
    'ccgExe',
    'ccgKey',
    'plugins',
  ]);
  const partOfDomain = bool(r, 'partOfDomain', '');
  // A DNS domain name (at most 253) or a NetBIOS workgroup name; nothing else prints here.
  if (
    typeof r.domain !== 'string' ||
    r.domain.length > 253 ||
    new RegExp(`${unprintable.source}|\\s`, 'u').test(r.domain)
  )
    fail('domain is not a domain or workgroup name');
  // A hashtable's array value stays an array in ConvertTo-Json, even with one element.
  if (!Array.isArray(r.plugins)) fail('plugins is not a list');
  const list: unknown[] = r.plugins;
  if (list.length > maxCcgPlugins) fail(`more than ${maxCcgPlugins} plugins`);
  const ccgKey = bool(r, 'ccgKey', '');
  if (!ccgKey && list.length > 0) fail('plugins listed without the CCG COMClasses key');
  const ccgPlugins = list.map((item, i) => {
    const field = `plugins[${i}]`;
    const p = exactKeys(item, field, ['clsid', 'comClassRegistered']);
    if (typeof p.clsid !== 'string' || !clsidPattern.test(p.clsid))
      fail(`${field}.clsid is not a COM class id ({xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx})`);
    return { clsid: p.clsid, comClassRegistered: bool(p, 'comClassRegistered', `${field}.`) };
  });
  return {
    partOfDomain,
    domain: r.domain,
    ccgAvailable: bool(r, 'ccgExe', '') && ccgKey,
    ccgPlugins,
  };
}
