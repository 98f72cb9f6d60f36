/**
 * The machine's trusted root CAs (Cert:\LocalMachine\Root) and its WinHTTP proxy, through
 * PowerShell: the scripts that list, add and remove a root certificate by thumbprint, set or
 * reset the WinHTTP proxy (netsh winhttp), and the parsers of what they print.
 *
 * A certificate travels as base64 DER inside a single-quoted literal and is added with
 * X509Store.Add, which computes its thumbprint itself (the SHA-1 of the DER, as
 * trusted-ca-bundle.ts does): the script prints it, and the agent checks it is the one it
 * asked for. Removal goes by the Cert: drive path of the thumbprint, which only a thumbprint
 * (40 hex digits, checked) can form. Only a real host proves the cmdlets' behaviour; the tests
 * parse every script with a PowerShell grammar.
 */
import { WinfleetError } from '../../errors/catalog.ts';
import {
  parsePowerShellJson,
  powerShellScript,
  quotePowerShellString,
  writeJson,
} from '../../powershell/powershell.ts';

/** A certificate in the store, as the agent needs it. */
export interface StoredCertificate {
  thumbprint: string;
  subject: string;
}

/** Throws unless `thumbprint` is 40 upper-case hex digits. */
export function checkThumbprint(thumbprint: string): void {
  if (!/^[0-9A-F]{40}$/.test(thumbprint))
    throw new WinfleetError(
      'WF_HOST_SETTINGS_FAILED',
      `Cannot use "${thumbprint}" as a certificate thumbprint; give the SHA-1 of the certificate as 40 upper-case hex digits`,
    );
}

/** The script that prints {"certificates": [{"thumbprint", "subject"}…]} of the Root store. */
export function listRootCertificatesScript(): string {
  return powerShellScript(
    '$certs = @(Get-ChildItem -Path Cert:\\LocalMachine\\Root | ForEach-Object { @{ thumbprint = $_.Thumbprint; subject = $_.Subject } })',
    writeJson('@{ certificates = $certs }', 3),
  );
}

/** The DER bytes of a single-certificate PEM; throws a WinfleetError for anything else. */
export function pemToDer(pem: string): Buffer {
  const match =
    /^-----BEGIN CERTIFICATE-----\r?\n([A-Za-z0-9+/=\r\n]+)-----END CERTIFICATE-----\s*$/.exec(
      pem.trim(),
    );
  if (!match)
    throw new WinfleetError(
      'WF_HOST_SETTINGS_FAILED',
      'Cannot add a root certificate: not one PEM CERTIFICATE block',
    );
  return Buffer.from(match[1]!.replace(/\s+/g, ''), 'base64');
}

/** The script that adds the certificate `pem` to the Root store and prints its thumbprint. */
export function addRootCertificateScript(pem: string): string {
  const base64 = pemToDer(pem).toString('base64');
  return powerShellScript(
    `$bytes = [System.Convert]::FromBase64String(${quotePowerShellString(base64)})`,
    '$cert = New-Object System.Security.Cryptography.X509Certificates.X509Certificate2 -ArgumentList (,$bytes)',
    "$store = New-Object System.Security.Cryptography.X509Certificates.X509Store -ArgumentList 'Root', 'LocalMachine'",
    "$store.Open('ReadWrite')",
    'try { $store.Add($cert) } finally { $store.Close() }',
    writeJson('@{ thumbprint = $cert.Thumbprint }', 2),
  );
}

/** The script that removes the certificate `thumbprint` from the Root store, if there. */
export function removeRootCertificateScript(thumbprint: string): string {
  checkThumbprint(thumbprint);
  return powerShellScript(
    `$path = ${quotePowerShellString(`Cert:\\LocalMachine\\Root\\${thumbprint}`)}`,
    '$found = Test-Path -LiteralPath $path',
    'if ($found) { Remove-Item -LiteralPath $path }',
    writeJson('@{ removed = $found }', 2),
  );
}

/** Reads what `listRootCertificatesScript` printed. */
export function parseRootCertificatesOutput(stdout: string): StoredCertificate[] {
  const value = parsePowerShellJson(stdout, 'the Root certificates') as {
    certificates?: unknown;
  } | null;
  const list = value?.certificates;
  if (
    !Array.isArray(list) ||
    !list.every(
      (c) =>
        typeof c?.thumbprint === 'string' &&
        /^[0-9A-F]{40}$/.test(c.thumbprint) &&
        typeof c?.subject === 'string',
    )
  )
    throw new WinfleetError(
      'WF_HOST_SETTINGS_FAILED',
      `Cannot read the Root certificates from ${JSON.stringify(value)?.slice(0, 200)}: expected {"certificates": [{"thumbprint", "subject"}]}`,
    );
  return list.map((c) => ({ thumbprint: c.thumbprint, subject: c.subject }));
}

/** Reads what `addRootCertificateScript` printed: the thumbprint Windows gave the certificate. */
export function parseAddRootCertificateOutput(stdout: string): { thumbprint: string } {
  const value = parsePowerShellJson(stdout, 'the added certificate') as {
    thumbprint?: unknown;
  } | null;
  if (typeof value?.thumbprint !== 'string' || !/^[0-9A-F]{40}$/.test(value.thumbprint))
    throw new WinfleetError(
      'WF_HOST_SETTINGS_FAILED',
      `Cannot read the added certificate from ${JSON.stringify(value)}: expected {"thumbprint": "<40 hex>"}`,
    );
  return { thumbprint: value.thumbprint };
}

/** Reads what `removeRootCertificateScript` printed. */
export function parseRemoveRootCertificateOutput(stdout: string): { removed: boolean } {
  const value = parsePowerShellJson(stdout, 'the certificate removal') as {
    removed?: unknown;
  } | null;
  if (typeof value?.removed !== 'boolean')
    throw new WinfleetError(
      'WF_HOST_SETTINGS_FAILED',
      `Cannot read the certificate removal from ${JSON.stringify(value)}: expected {"removed": true|false}`,
    );
  return { removed: value.removed };
}

/** The WinHTTP proxy: what `netsh winhttp set proxy` takes. */
export interface WinHttpProxy {
  /** "host:port", or per scheme "http=host:port;https=host:port". */
  proxyServer: string;
  /** Semicolon-separated bypass patterns (proxy-settings.ts). */
  bypassList: string;
}

const proxyServerPattern = /^[A-Za-z0-9=.:;_-]{1,2048}$/;
const bypassPattern = /^[A-Za-z0-9.*:;<>[\]_-]{0,8192}$/;

/**
 * The script that sets the WinHTTP proxy (`netsh winhttp set proxy`), or resets it to direct
 * access when `proxy` is undefined, and prints {"exitCode": n}.
 */
export function setWinHttpProxyScript(proxy: WinHttpProxy | undefined): string {
  if (
    proxy &&
    (!proxyServerPattern.test(proxy.proxyServer) || !bypassPattern.test(proxy.bypassList))
  )
    throw new WinfleetError(
      'WF_HOST_SETTINGS_FAILED',
      `Cannot set the WinHTTP proxy "${proxy.proxyServer}" bypassing "${proxy.bypassList}": only host names, ports and the bypass list's "*", "<local>" and ";" may appear`,
    );
  const command = proxy
    ? `& netsh.exe winhttp set proxy ${quotePowerShellString(`proxy-server=${proxy.proxyServer}`)} ${quotePowerShellString(`bypass-list=${proxy.bypassList}`)} | Out-Null`
    : '& netsh.exe winhttp reset proxy | Out-Null';
  return powerShellScript(command, writeJson('@{ exitCode = $LASTEXITCODE }', 2));
}

/** Reads what `setWinHttpProxyScript` printed; throws when netsh failed. */
export function parseSetWinHttpProxyOutput(stdout: string): void {
  const value = parsePowerShellJson(stdout, 'the WinHTTP proxy') as { exitCode?: unknown } | null;
  if (value?.exitCode !== 0)
    throw new WinfleetError(
      'WF_HOST_SETTINGS_FAILED',
      `netsh winhttp failed with exit code ${JSON.stringify(value?.exitCode)}; run "netsh winhttp show proxy" on the host`,
    );
}
