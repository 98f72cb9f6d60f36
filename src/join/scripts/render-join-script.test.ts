import assert from 'node:assert/strict';
import { test } from 'node:test';
import { readJoinScript } from '../../../sim/hosts/join-script-reader.ts';
import { parsePowerShellTree } from '../../../sim/testkit/powershell-grammar.ts';
import { hasCode } from '../../errors/catalog.ts';
import { quotePowerShellString } from '../../powershell/powershell.ts';
import { azureCommandToExecute } from './azure.ts';
import {
  type JoinScriptFormat,
  type JoinScriptValues,
  joinScriptFormats,
  renderJoinScript,
  userDataLimitBytes,
} from './render-join-script.ts';

/** Long but realistic values: a registry blob URL of a long repository, a long namespace. */
const realistic: JoinScriptValues = {
  agentUrl: `https://registry-${'a'.repeat(40)}.example.com:5000/v2/${'team/'.repeat(20)}winfleet/payload/blobs/sha256:${'e'.repeat(64)}`,
  agentSha256: 'f'.repeat(64),
  apiServer: `https://${'k8s-api-'.repeat(20)}example.com:6443`,
  token: 'abcdef.0123456789abcdef',
  caCertHash: `sha256:${'c'.repeat(64)}`,
  namespace: `winfleet-${'n'.repeat(54)}`,
  nodeName: `win-${'w'.repeat(59)}`,
};

/** The PowerShell inside a format's wrapper. */
function powerShellOf(format: JoinScriptFormat, text: string): string {
  if (format === 'aws') return /^<powershell>\n([\s\S]*)<\/powershell>\n$/.exec(text)![1]!;
  if (format === 'cloudbase-init') return text.replace(/^#ps1_sysnative\n/, '');
  return text;
}

function expectedArgs(values: JoinScriptValues): string[] {
  return [
    'join',
    '--api-server',
    values.apiServer,
    '--ca-cert-hash',
    values.caCertHash,
    '--namespace',
    values.namespace,
    ...(values.nodeName ? ['--node-name', values.nodeName] : []),
  ];
}

test('every format fits in 16 KB with long values and parses without errors', async () => {
  for (const format of joinScriptFormats) {
    const text = renderJoinScript(format, realistic);
    const bytes = Buffer.byteLength(text);
    assert.ok(bytes <= userDataLimitBytes, `${format}: ${bytes} bytes`);
    const { root, errors } = await parsePowerShellTree(powerShellOf(format, text));
    assert.deepEqual(errors, [], format);
    const read = readJoinScript(root);
    assert.equal(read.agentUrl, realistic.agentUrl);
    assert.equal(read.agentSha256, realistic.agentSha256);
    assert.deepEqual(read.joinArgs, expectedArgs(realistic), format);
    assert.equal(read.token, realistic.token, format);
    assert.ok(!read.joinArgs.some((a) => a.includes(realistic.token)), 'no token in argv');
  }
});

test('each format has its wrapper; the script checks the hash and exits non-zero on failure', () => {
  const plain = renderJoinScript('powershell', realistic);
  assert.match(renderJoinScript('aws', realistic), /^<powershell>\n[\s\S]*\n<\/powershell>\n$/);
  assert.match(renderJoinScript('cloudbase-init', realistic), /^#ps1_sysnative\n/);
  const azure = renderJoinScript('azure', realistic);
  assert.ok(azure.endsWith(plain), 'Azure custom data is the plain script after its comment');
  assert.ok(azure.includes(azureCommandToExecute));
  assert.match(plain, /Tls12/);
  // TLS 1.3 is asked for only where SChannel has it (Server 2022, build 20348, and later):
  // Server 2019's SChannel has no TLS 1.3 even when .NET Framework 4.8's enum names it.
  assert.match(
    plain,
    /if \(\[Environment\]::OSVersion\.Version\.Build -ge 20348 -and \[Enum\]::GetNames\(\[Net\.SecurityProtocolType\]\) -contains 'Tls13'\)/,
  );
  assert.match(plain, /Get-FileHash -LiteralPath \$download -Algorithm SHA256/);
  assert.match(plain, /if \(\$actual -ne \$agentSha256\) \{\n {4}Remove-Item/);
  assert.match(plain, /\$LASTEXITCODE -ne 0/);
  assert.match(
    plain,
    /exit 1\n\} finally \{\n {2}Remove-Item -LiteralPath Env:WINFLEET_JOIN_TOKEN -ErrorAction SilentlyContinue\n {2}if \(\$PSCommandPath\) \{ Remove-Item -LiteralPath \$PSCommandPath -Force -ErrorAction SilentlyContinue \}\n\}\nexit 0\n$/,
  );
  assert.doesNotMatch(plain, /--token/, 'the token is never an argument');
  // Azure: neither CustomData.bin nor the .ps1 copy outlives the run.
  assert.match(
    azureCommandToExecute,
    /Remove-Item -LiteralPath C:\\AzureData\\CustomData\.bin -Force; & C:\\AzureData\\winfleet-join\.ps1; \$code = \$LASTEXITCODE; Remove-Item -LiteralPath C:\\AzureData\\winfleet-join\.ps1 -Force -ErrorAction SilentlyContinue; exit \$code"$/,
  );
  assert.match(plain, /Set-Acl -LiteralPath 'C:\\k'/);
  // What a local user or the image left in C:\k goes to Administrators and inherits, after
  // C:\k's DACL is set and before anything is downloaded into it (security review 3, §12).
  const reset = plain.indexOf("Get-ChildItem -LiteralPath 'C:\\k' -Force");
  assert.ok(reset > plain.indexOf("Set-Acl -LiteralPath 'C:\\k'"), 'the reset follows Set-Acl');
  assert.ok(reset < plain.indexOf('Invoke-WebRequest'), 'the reset precedes the download');
  assert.match(
    plain,
    /@\('\/setowner', '\*S-1-5-32-544', '\/T', '\/Q'\), @\('\/reset', '\/T', '\/Q'\)/,
  );
  assert.match(plain, /& icacls\.exe \$child\.FullName @icaclsArgs/);
  // Without --node-name the host's own name is used.
  const { nodeName: _n, ...noName } = realistic;
  assert.doesNotMatch(renderJoinScript('powershell', noName), /--node-name/);
});

test('hostile values stay inside their literals: the parsed arguments are exactly the values', async () => {
  const hostile: JoinScriptValues = {
    ...realistic,
    agentUrl: "https://evil.example.com/a'b'';Remove-Item;$(whoami)/x?q=$env:TEMP&r=')+('",
    apiServer: "https://api.example.com/p'$(Invoke-Expression('calc'))'/''",
  };
  for (const format of joinScriptFormats) {
    const { root, errors } = await parsePowerShellTree(
      powerShellOf(format, renderJoinScript(format, hostile)),
    );
    assert.deepEqual(errors, [], format);
    const read = readJoinScript(root);
    assert.equal(read.agentUrl, hostile.agentUrl, format);
    assert.deepEqual(read.joinArgs, expectedArgs(hostile), format);
  }
});

test('values no URL or token can hold are refused, naming the field', () => {
  const refused = (change: Partial<JoinScriptValues>, pattern: RegExp) =>
    assert.throws(
      () => renderJoinScript('aws', { ...realistic, ...change }),
      (error) => {
        assert.ok(hasCode(error, 'WF_JOIN_SCRIPT_INVALID'), String(error));
        assert.match((error as Error).message, pattern);
        assert.ok(!(error as Error).message.includes('0123456789abcdef'), 'no token in messages');
        return true;
      },
      JSON.stringify(change),
    );
  refused(
    { agentUrl: 'https://x.example.com/a\nb' },
    /agentUrl must be at most 2048 characters a URI has/,
  );
  refused({ agentUrl: 'https://x.example.com/`whoami`' }, /agentUrl must be at most/);
  refused({ agentUrl: 'https://x.example.com/"a"' }, /agentUrl must be at most/);
  refused({ agentUrl: 'https://x.example.com/</powershell><script>' }, /agentUrl must be at most/);
  refused({ agentUrl: 'https://x.example.com/\u2019' }, /agentUrl must be at most/);
  refused({ agentUrl: 'http://registry.example.com/agent.exe' }, /plain http only to a loopback/);
  refused({ agentUrl: 'ftp://registry.example.com/agent.exe' }, /must be an https/);
  refused({ agentSha256: 'z'.repeat(64) }, /agentSha256 is "z+", not 64 hex digits/);
  refused({ apiServer: 'https://api.example.com/a b' }, /apiServer must be https/);
  refused({ apiServer: 'https://api.example.com/?x=1' }, /apiServer must be https/);
  refused({ token: "abcdef.0123456789abcdef'; calc; '" }, /token is not a bootstrap token/);
  refused({ caCertHash: "sha256:'$(calc)'" }, /caCertHash is/);
  refused({ namespace: "ns'; calc" }, /namespace is .* not an RFC 1123 label/);
  refused({ nodeName: 'WIN_A\nx' }, /nodeName is .* not an RFC 1123 label/);
  assert.throws(
    () => renderJoinScript('bash' as JoinScriptFormat, realistic),
    /format "bash"; use one of powershell, aws, azure, cloudbase-init/,
  );
  // Plain http to the lab's loopback registry is allowed.
  assert.ok(
    renderJoinScript('aws', {
      ...realistic,
      agentUrl: 'http://127.0.0.1:5000/v2/x/blobs/sha256:ab',
    }),
  );
});

test('the literal quoting holds for any text, newlines and backticks included', async () => {
  for (const value of [
    "it's",
    "''",
    '$(Remove-Item C:\\ -Recurse)',
    '`n`$x`',
    'line1\nline2\r\n$(x)',
    '\u2018typographic\u2019 \u201aquotes\u201b',
    "'; exit 0; '",
  ]) {
    const script = `$agentUrl = ${quotePowerShellString(value)}\n$agentSha256 = 'x'\n$env:WINFLEET_JOIN_TOKEN = ${quotePowerShellString(value)}\n& $agent join --namespace ${quotePowerShellString(value)}\n`;
    const { root, errors } = await parsePowerShellTree(script);
    assert.deepEqual(errors, [], value);
    const read = readJoinScript(root);
    assert.equal(read.agentUrl, value);
    assert.deepEqual(read.joinArgs, ['join', '--namespace', value]);
    assert.equal(read.token, value);
  }
});

test("a pre-pulling pool's script asks the agent to register the Node with the pre-pull taint, and only then", async () => {
  for (const format of joinScriptFormats) {
    const tainted = renderJoinScript(format, { ...realistic, prePullTaint: true });
    const { root, errors } = await parsePowerShellTree(powerShellOf(format, tainted));
    assert.deepEqual(errors, [], format);
    assert.deepEqual(readJoinScript(root).joinArgs.slice(-2), ['--pre-pull-taint', 'true'], format);
    assert.doesNotMatch(renderJoinScript(format, realistic), /--pre-pull-taint/, format);
  }
  assert.throws(
    () =>
      renderJoinScript('powershell', {
        ...realistic,
        prePullTaint: 'yes' as unknown as true,
      }),
    /prePullTaint is not true/,
  );
});
