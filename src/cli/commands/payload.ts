/**
 * winfleet payload push DIR REGISTRY/REPOSITORY:TAG: stores a payload directory (payload.json
 * and its files) in an OCI registry as one artifact (src/payload/oci), and prints the pinned
 * reference `registry/repository@sha256:…` that the operator's --payload-image (the chart's
 * payload.registry.reference) takes. Progress goes to standard error, the reference alone to
 * standard output, for scripts.
 *
 *   winfleet payload push ./payload registry.example.com/winfleet/payload:1.36.5-wf.1
 *   echo "$TOKEN" | winfleet payload push ./payload 127.0.0.1:5000/winfleet/payload:dev \
 *     --plain-http --username ci --password-stdin
 *
 * Credentials come from the Docker config (`$DOCKER_CONFIG/config.json`, else
 * `~/.docker/config.json`, as `docker login` writes it) or from --username with the password on
 * standard input (never as a flag: it would show in the process list and the shell history).
 */
import { readFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { join } from 'node:path';
import type { Command } from 'commander';
import { hostAddress } from '../../images/address-policy.ts';
import type { DockerConfigSource } from '../../images/docker-config.ts';
import { isLoopbackHost } from '../../net/loopback.ts';
import { parsePushReference } from '../../payload/oci/payload-reference.ts';
import { pushPayload } from '../../payload/oci/push-payload.ts';
import { cliExit, ExitCode } from '../exit-codes.ts';

interface PushFlags {
  username?: string;
  passwordStdin?: boolean;
  plainHttp?: boolean;
  insecure?: boolean;
  caFile?: string;
}

const usage = (message: string) => cliExit(ExitCode.usage, message);

/** A size for people: "512 B", "3.4 MiB". */
function formatBytes(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KiB`;
  return `${(bytes / 1024 / 1024).toFixed(1)} MiB`;
}

/** Standard input to its end, without the line end a pipe or `echo` adds. */
async function readStdin(): Promise<string> {
  let text = '';
  for await (const chunk of process.stdin) {
    text += chunk;
    if (text.length > 64 * 1024) throw usage('--password-stdin: standard input is over 64 KiB');
  }
  return text.replace(/\r?\n$/, '');
}

/**
 * The Docker config as a credential source, with the entries that only point at a credential
 * helper left out (winfleet runs no helpers); `undefined` when there is none.
 */
async function dockerConfig(
  registry: string,
  warn: (line: string) => void,
): Promise<DockerConfigSource | undefined> {
  const dir = process.env.DOCKER_CONFIG || join(homedir(), '.docker');
  const file = join(dir, 'config.json');
  let doc: { auths?: Record<string, unknown>; credsStore?: unknown; credHelpers?: unknown };
  try {
    doc = JSON.parse(await readFile(file, 'utf8'));
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    warn(`warning: ignoring ${file}: ${(error as Error).message}`);
    return undefined;
  }
  const auths = Object.fromEntries(
    Object.entries(doc?.auths ?? {}).filter(
      ([, v]) => v && typeof v === 'object' && Object.keys(v).length > 0,
    ),
  );
  const helpers = doc?.credHelpers as Record<string, unknown> | undefined;
  if (doc?.credsStore || helpers?.[registry]) {
    warn(
      `note: ${file} keeps some credentials in a credential helper, which winfleet does not run; if the registry refuses, give --username and --password-stdin`,
    );
  }
  return { source: file, config: { auths } };
}

async function push(dir: string, reference: string, flags: PushFlags): Promise<void> {
  let to: ReturnType<typeof parsePushReference>;
  try {
    to = parsePushReference(reference, 'REFERENCE');
  } catch (error) {
    throw usage((error as Error).message);
  }
  if (flags.insecure && !flags.plainHttp)
    throw usage(
      '--insecure only allows --plain-http to a host that is not loopback; give both or neither',
    );
  const host = hostAddress(to.registry.replace(/:\d+$/, ''));
  if (flags.plainHttp && !flags.insecure && !isLoopbackHost(host)) {
    throw usage(
      `--plain-http: "${to.registry}" is not a loopback address, and plain HTTP would carry the payload and the credentials unencrypted; use HTTPS, or add --insecure to do it anyway`,
    );
  }
  if (flags.passwordStdin && !flags.username) throw usage('--password-stdin needs --username');
  if (flags.username && !flags.passwordStdin)
    throw usage(
      '--username needs --password-stdin (the password is read from standard input, never taken as a flag)',
    );
  let caBundle: string | undefined;
  if (flags.caFile) {
    try {
      caBundle = await readFile(flags.caFile, 'utf8');
    } catch (error) {
      throw usage(
        `--ca-file: cannot read ${flags.caFile} (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`,
      );
    }
    if (!caBundle.includes('-----BEGIN CERTIFICATE-----'))
      throw usage(
        `--ca-file: ${flags.caFile} holds no PEM certificate ("-----BEGIN CERTIFICATE-----")`,
      );
  }
  const warn = (line: string) => process.stderr.write(`${line}\n`);
  let credentials: { username: string; password: string } | undefined;
  if (flags.username) {
    const password = await readStdin();
    if (password === '')
      throw usage('--password-stdin: standard input is empty; pipe the password in');
    credentials = { username: flags.username, password };
  }
  const docker = credentials ? undefined : await dockerConfig(to.registry, warn);
  const pushed = await pushPayload(dir, to, {
    ...(credentials ? { credentials } : {}),
    ...(docker ? { dockerConfigs: [docker] } : {}),
    ...(flags.plainHttp ? { plainHttp: true } : {}),
    ...(caBundle ? { caBundle } : {}),
    wording: {
      given: credentials ? 'the --username credentials' : 'the Docker config credentials',
      missing: 'the Docker config has none for it',
      fix: 'log in with docker login, or give --username and --password-stdin',
    },
    userAgent: 'winfleet-cli',
    onFile: ({ name, size, uploaded }) =>
      warn(uploaded ? `pushed ${name} (${formatBytes(size)})` : `${name}: in the registry already`),
  });
  process.stdout.write(`${pushed.reference}\n`);
}

export function registerPayload(program: Command): void {
  const payload = program
    .command('payload')
    .description('the Windows payload as an OCI artifact in a registry');
  payload
    .command('push')
    .description(
      'push a payload directory (payload.json and its files) to a registry; prints the pinned reference for --payload-image',
    )
    .argument('<dir>', 'the payload directory (make payload builds one)')
    .argument('<reference>', 'where to push: registry/repository:tag')
    .option('--username <name>', 'registry user (the password is read from standard input)')
    .option('--password-stdin', 'read the password for --username from standard input')
    .option('--plain-http', 'talk plain HTTP to the registry (loopback registries)')
    .option('--insecure', 'allow --plain-http to a registry that is not on loopback')
    .option(
      '--ca-file <file>',
      'PEM CA certificates to trust for the registry, besides the system roots',
    )
    .action((dir: string, reference: string, flags: PushFlags) => push(dir, reference, flags));
}
