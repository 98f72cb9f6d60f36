/**
 * A registry token service for tests, speaking the Docker token protocol that
 * docker-registry's `auth: token` expects: GET /token?service=…&scope=repository:<name>:pull
 * with optional basic credentials, or POST /token with an OAuth2 refresh token, answering a
 * JWT signed with ES256 whose x5c header carries a certificate issued by a CA that the
 * registry trusts (its `rootcertbundle`). Anonymous clients get pull access to public
 * repositories only; known users get what they ask for.
 */
import { createPrivateKey, randomUUID, sign, X509Certificate } from 'node:crypto';
import { once } from 'node:events';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createCertificateAuthority, issueCertificate } from '../../src/pki/certificates.ts';

export interface TokenServerOptions {
  /** The registry's `auth.token.service`; tokens are issued for it only. */
  service?: string;
  /** The registry's `auth.token.issuer`. */
  issuer?: string;
  /** username → password. */
  users?: Record<string, string>;
  /** OAuth2 refresh tokens ("identitytoken" in Docker config) → username. */
  refreshTokens?: Record<string, string>;
  /** Repositories anonymous clients may pull (default: all but those under "private/"). */
  isPublic?: (repository: string) => boolean;
  /** Token lifetime in seconds (default 300). */
  expiresInSeconds?: number;
}

export interface TokenServer {
  /** The realm URL to configure in the registry. */
  realm: string;
  service: string;
  issuer: string;
  /** PEM of the CA that issued the signing certificate: the registry's rootcertbundle. */
  rootCertBundle: string;
  /** Requests served so far, for tests that check token reuse. */
  readonly requests: { method: string; scope: string; account: string }[];
  stop(): Promise<void>;
}

function base64url(data: string | Buffer): string {
  return Buffer.from(data).toString('base64url');
}

interface Access {
  type: string;
  name: string;
  actions: string[];
}

function parseScope(scope: string): Access | undefined {
  // repository:<name>:<actions>; names may not contain ":" but may contain "/".
  const match = /^(repository):([^:]+):([a-z,*]+)$/.exec(scope);
  if (!match) return undefined;
  return { type: match[1]!, name: match[2]!, actions: match[3]!.split(',') };
}

async function readBody(req: IncomingMessage, limit = 64 * 1024): Promise<string> {
  let body = '';
  for await (const chunk of req) {
    body += chunk;
    if (body.length > limit) throw new Error('Token request body too large');
  }
  return body;
}

/** Starts a token service on a free loopback port. */
export async function startTokenServer(options: TokenServerOptions = {}): Promise<TokenServer> {
  const service = options.service ?? 'winfleet-test-registry';
  const issuer = options.issuer ?? 'winfleet-test-token-issuer';
  const users = options.users ?? {};
  const refreshTokens = options.refreshTokens ?? {};
  const isPublic = options.isPublic ?? ((repository: string) => !repository.startsWith('private/'));
  const expiresIn = options.expiresInSeconds ?? 300;

  const ca = await createCertificateAuthority('winfleet test token CA');
  const signer = await issueCertificate(ca, {
    commonName: 'winfleet test token signer',
    usage: 'client',
  });
  const signingKey = createPrivateKey(signer.keyPem);
  const x5c = [new X509Certificate(signer.certPem).raw.toString('base64')];
  const requests: TokenServer['requests'] = [];

  function issue(account: string, access: Access[]): string {
    const nowSeconds = Math.floor(Date.now() / 1000);
    const header = { typ: 'JWT', alg: 'ES256', x5c };
    const claims = {
      iss: issuer,
      sub: account,
      aud: service,
      exp: nowSeconds + expiresIn,
      nbf: nowSeconds - 5,
      iat: nowSeconds,
      jti: randomUUID(),
      access,
    };
    const signingInput = `${base64url(JSON.stringify(header))}.${base64url(JSON.stringify(claims))}`;
    // JWS ES256 wants the raw r||s signature, not DER.
    const signature = sign('sha256', Buffer.from(signingInput), {
      key: signingKey,
      dsaEncoding: 'ieee-p1363',
    });
    return `${signingInput}.${base64url(signature)}`;
  }

  function answer(res: ServerResponse, status: number, body: unknown): void {
    const text = JSON.stringify(body);
    res.writeHead(status, {
      'content-type': 'application/json',
      'content-length': Buffer.byteLength(text),
    });
    res.end(text);
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://localhost');
    if (url.pathname !== '/token') return answer(res, 404, { error: 'not found' });
    let account = '';
    let scopes: string[];
    let requestedService: string | null;
    if (req.method === 'POST') {
      const form = new URLSearchParams(await readBody(req));
      if (form.get('grant_type') !== 'refresh_token') {
        return answer(res, 400, { error: 'unsupported_grant_type' });
      }
      account = refreshTokens[form.get('refresh_token') ?? ''] ?? '';
      if (!account) return answer(res, 401, { error: 'invalid_grant' });
      scopes = (form.get('scope') ?? '').split(' ').filter(Boolean);
      requestedService = form.get('service');
    } else if (req.method === 'GET') {
      const authorization = req.headers.authorization ?? '';
      if (authorization) {
        const [scheme, encoded = ''] = authorization.split(' ');
        const decoded = Buffer.from(encoded, 'base64').toString('utf8');
        const colon = decoded.indexOf(':');
        const user = decoded.slice(0, colon);
        if (
          scheme?.toLowerCase() !== 'basic' ||
          colon < 0 ||
          users[user] === undefined ||
          users[user] !== decoded.slice(colon + 1)
        ) {
          requests.push({
            method: 'GET',
            scope: url.searchParams.getAll('scope').join(' '),
            account: `!${user}`,
          });
          return answer(res, 401, {
            errors: [{ code: 'UNAUTHORIZED', message: 'invalid username or password' }],
          });
        }
        account = user;
      }
      scopes = url.searchParams
        .getAll('scope')
        .flatMap((s) => s.split(' '))
        .filter(Boolean);
      requestedService = url.searchParams.get('service');
    } else {
      return answer(res, 405, { error: 'method not allowed' });
    }
    requests.push({ method: req.method, scope: scopes.join(' '), account });
    if (requestedService !== service) {
      return answer(res, 400, {
        errors: [{ code: 'DENIED', message: `unknown service "${requestedService}"` }],
      });
    }
    const access = scopes
      .map(parseScope)
      .filter((a): a is Access => a !== undefined)
      .map((a) => ({
        ...a,
        // Anonymous clients may only pull public repositories; users get what they ask for.
        actions: account
          ? a.actions
          : isPublic(a.name)
            ? a.actions.filter((x) => x === 'pull')
            : [],
      }));
    const token = issue(account, access);
    answer(res, 200, {
      token,
      access_token: token,
      expires_in: expiresIn,
      issued_at: new Date().toISOString(),
    });
  }

  const server = createServer((req, res) => {
    handle(req, res).catch((error: Error) => answer(res, 500, { error: error.message }));
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  return {
    realm: `http://127.0.0.1:${port}/token`,
    service,
    issuer,
    rootCertBundle: ca.certPem,
    requests,
    async stop() {
      server.closeAllConnections();
      server.close();
      await once(server, 'close').catch(() => {});
    },
  };
}
