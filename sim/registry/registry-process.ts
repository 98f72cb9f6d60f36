/**
 * A real OCI registry for tests and the lab: Debian's `docker-registry` (distribution 2.8) on a
 * free loopback port with filesystem storage in a temp dir. It can require HTTP basic auth
 * (htpasswd), bearer tokens from a token service (see token-server.ts), and serve TLS with a
 * CA of its own. It runs in its own process group and dies with the test process.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { mkdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { stringify } from 'yaml';
import { createCertificateAuthority, issueCertificate } from '../../src/pki/certificates.ts';
import { ComponentProcess } from '../cluster/component-process.ts';
import { freePort } from '../cluster/free-port.ts';
import { ComponentStartError, probe } from '../cluster/health.ts';
import type { TokenServer } from './token-server.ts';

/** The user the htpasswd registry knows. */
export const basicAuthUser = {
  username: 'winfleet',
  password: 'winfleet-basic-password',
  // bcrypt (cost 4, the fastest the registry accepts) of the password above.
  htpasswd: 'winfleet:$2b$04$4k3Hp0Q.1H5ebEiJ.qHbtul0C0zeCo1oi8.I9ymo5iMGPygAlbHAi',
} as const;

export interface TestRegistryOptions {
  /** Who may read and write: nobody needs credentials (default), htpasswd basic auth, or tokens. */
  auth?: 'none' | 'htpasswd' | { token: TokenServer };
  /** Serve HTTPS with a certificate for 127.0.0.1 from a fresh CA (returned as `caPem`). */
  tls?: boolean;
  /** Use this storage directory instead of a fresh one (e.g. to serve one store twice). */
  storageDir?: string;
  /**
   * Listen on this loopback port (default: a free one). With `storageDir`, a registry stopped
   * and started again serves the same store at the same address: references stay valid.
   */
  port?: number;
  /** The binary; `docker-registry` on PATH by default. */
  binary?: string;
}

export interface TestRegistry {
  /** "127.0.0.1:<port>", as image references name it. */
  host: string;
  /** "http(s)://127.0.0.1:<port>". */
  url: string;
  /** The CA of a TLS registry. */
  caPem?: string;
  /** Credentials that can push and pull, when the registry requires auth. */
  credentials?: { username: string; password: string };
  storageDir: string;
  dir: string;
  component: ComponentProcess;
  stop(): Promise<void>;
}

const running = new Set<TestRegistry>();
let exitHookInstalled = false;

function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.on('exit', () => {
    for (const registry of running) {
      registry.component.killNow();
      rmSync(registry.dir, { recursive: true, force: true });
    }
  });
}

/** Starts a registry and resolves when it answers on /v2/. */
export async function startTestRegistry(options: TestRegistryOptions = {}): Promise<TestRegistry> {
  installExitHook();
  const dir = mkdtempSync(join(tmpdir(), 'winfleet-registry-'));
  const storageDir = options.storageDir ?? join(dir, 'storage');
  await mkdir(storageDir, { recursive: true });
  const port = options.port ?? (await freePort());
  const host = `127.0.0.1:${port}`;
  const scheme = options.tls ? 'https' : 'http';
  const config: Record<string, unknown> = {
    version: 0.1,
    log: { level: 'info', fields: { service: 'registry' } },
    storage: { filesystem: { rootdirectory: storageDir }, delete: { enabled: true } },
    http: { addr: host, secret: randomBytes(16).toString('hex'), draintimeout: '1s' },
  };
  const http = config.http as Record<string, unknown>;
  let caPem: string | undefined;
  if (options.tls) {
    const ca = await createCertificateAuthority('winfleet test registry CA');
    const serving = await issueCertificate(ca, {
      commonName: 'winfleet test registry',
      ipAddresses: ['127.0.0.1'],
      dnsNames: ['localhost'],
      usage: 'server',
    });
    await writeFile(join(dir, 'tls.crt'), serving.certPem);
    await writeFile(join(dir, 'tls.key'), serving.keyPem, { mode: 0o600 });
    http.tls = { certificate: join(dir, 'tls.crt'), key: join(dir, 'tls.key') };
    caPem = ca.certPem;
  }
  let credentials: TestRegistry['credentials'];
  const auth = options.auth ?? 'none';
  if (auth === 'htpasswd') {
    await writeFile(join(dir, 'htpasswd'), `${basicAuthUser.htpasswd}\n`);
    config.auth = { htpasswd: { realm: 'winfleet-test-registry', path: join(dir, 'htpasswd') } };
    credentials = { username: basicAuthUser.username, password: basicAuthUser.password };
  } else if (auth !== 'none') {
    await writeFile(join(dir, 'token-ca.pem'), auth.token.rootCertBundle);
    config.auth = {
      token: {
        realm: auth.token.realm,
        service: auth.token.service,
        issuer: auth.token.issuer,
        rootcertbundle: join(dir, 'token-ca.pem'),
      },
    };
  }
  const configPath = join(dir, 'config.yml');
  await writeFile(configPath, stringify(config));

  const component = new ComponentProcess({
    name: 'docker-registry',
    binary: options.binary ?? 'docker-registry',
    args: ['serve', configPath],
    logFile: join(dir, 'registry.log'),
  });
  const registry: TestRegistry = {
    host,
    url: `${scheme}://${host}`,
    ...(caPem ? { caPem } : {}),
    ...(credentials ? { credentials } : {}),
    storageDir,
    dir,
    component,
    async stop() {
      running.delete(registry);
      await component.stop(2000);
      await rm(dir, { recursive: true, force: true });
    },
  };
  running.add(registry);
  try {
    await waitUntilServing(registry, 15_000);
  } catch (error) {
    await registry.stop();
    throw error;
  }
  return registry;
}

/** Polls /v2/ until it answers 200 or 401 (auth required), failing early if the process exits. */
async function waitUntilServing(registry: TestRegistry, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last = 'no answer yet';
  while (Date.now() < deadline) {
    if (registry.component.exited) {
      const code = await registry.component.waitForExit();
      throw new ComponentStartError(
        'docker-registry',
        `exited with code ${code}${code === 127 ? '; the docker-registry command is missing: run hack/ensure-packages.sh' : ''}`,
        registry.component.logTail(),
      );
    }
    try {
      const { status } = await probe(
        `${registry.url}/v2/`,
        registry.caPem ? { ca: registry.caPem } : undefined,
        1000,
      );
      if (status === 200 || status === 401) return;
      last = `HTTP ${status}`;
    } catch (error) {
      last = (error as Error).message;
    }
    await sleep(50);
  }
  throw new ComponentStartError(
    'docker-registry',
    `${registry.url}/v2/ still failing (${last})`,
    registry.component.logTail(),
  );
}
