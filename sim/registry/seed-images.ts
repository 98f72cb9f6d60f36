/**
 * Pushes synthetic images into a registry through the distribution HTTP API (there is no
 * docker CLI here): blob uploads (POST then PUT with the digest) for layers and configs, then
 * manifest PUTs, children of an index first. It answers basic-auth and bearer-token challenges
 * with the credentials it is given, asking for push and pull.
 */
import { createHash } from 'node:crypto';
import { request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { gzipSync } from 'node:zlib';
import type { CatalogEntry, SyntheticImage, SyntheticManifest } from './catalog.ts';

const types = {
  oci: {
    index: 'application/vnd.oci.image.index.v1+json',
    manifest: 'application/vnd.oci.image.manifest.v1+json',
    config: 'application/vnd.oci.image.config.v1+json',
    layer: 'application/vnd.oci.image.layer.v1.tar+gzip',
  },
  docker: {
    index: 'application/vnd.docker.distribution.manifest.list.v2+json',
    manifest: 'application/vnd.docker.distribution.manifest.v2+json',
    config: 'application/vnd.docker.container.image.v1+json',
    layer: 'application/vnd.docker.image.rootfs.diff.tar.gzip',
  },
} as const;

/** Where to push, and as whom. */
export interface SeedTarget {
  /** "http(s)://127.0.0.1:<port>". */
  url: string;
  caPem?: string;
  credentials?: { username: string; password: string };
}

export interface SeedOptions {
  /** Put every repository under this prefix, as a mirror with `pathPrefix` expects. */
  pathPrefix?: string;
  /** Images pushed at once (default 8). */
  concurrency?: number;
}

/** A pushed image: where it is and what the registry should serve for it. */
export interface SeededImage {
  entry: CatalogEntry;
  /** The repository it was pushed to (with the prefix). */
  repository: string;
  digest: string;
  mediaType: string;
}

interface Response {
  status: number;
  headers: IncomingHttpHeaders;
  body: string;
}

function sha256(data: Buffer): string {
  return `sha256:${createHash('sha256').update(data).digest('hex')}`;
}

function send(
  target: SeedTarget,
  method: string,
  url: string,
  headers: Record<string, string>,
  body?: Buffer,
): Promise<Response> {
  return new Promise((resolve, reject) => {
    const isHttps = url.startsWith('https:');
    const req = (isHttps ? httpsRequest : httpRequest)(
      url,
      {
        method,
        headers: { ...headers, 'content-length': String(body?.length ?? 0) },
        timeout: 10_000,
        ...(isHttps && target.caPem ? { ca: target.caPem } : {}),
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          text += chunk;
        });
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body: text }),
        );
        res.on('error', reject);
      },
    );
    req.on('timeout', () => req.destroy(new Error(`${method} ${url} timed out`)));
    req.on('error', reject);
    req.end(body);
  });
}

/** A pusher for one registry; it keeps one token per repository. */
class Pusher {
  readonly #target: SeedTarget;
  readonly #authorization = new Map<string, string>();

  constructor(target: SeedTarget) {
    this.#target = target;
  }

  async #authorize(repository: string, challenge: string): Promise<string> {
    const { credentials } = this.#target;
    const basic = credentials
      ? `Basic ${Buffer.from(`${credentials.username}:${credentials.password}`).toString('base64')}`
      : undefined;
    if (/^basic/i.test(challenge)) {
      if (!basic)
        throw new Error(
          `The registry ${this.#target.url} wants basic auth; pass credentials to seed it`,
        );
      return basic;
    }
    const params = Object.fromEntries(
      [...challenge.matchAll(/(\w+)="([^"]*)"/g)].map((m) => [m[1]!.toLowerCase(), m[2]!]),
    );
    if (!params.realm)
      throw new Error(`Cannot seed ${this.#target.url}: challenge "${challenge}" has no realm`);
    const url = new URL(params.realm);
    if (params.service) url.searchParams.set('service', params.service);
    url.searchParams.set('scope', `repository:${repository}:pull,push`);
    const response = await send(
      this.#target,
      'GET',
      url.href,
      basic ? { authorization: basic } : {},
    );
    if (response.status !== 200) {
      throw new Error(
        `Token service ${url.origin} refused to let us push "${repository}": HTTP ${response.status} ${response.body}`,
      );
    }
    return `Bearer ${(JSON.parse(response.body) as { token: string }).token}`;
  }

  /** Sends a request for `repository`, answering one auth challenge. */
  async request(
    repository: string,
    method: string,
    url: string,
    headers: Record<string, string>,
    body?: Buffer,
  ): Promise<Response> {
    const known = this.#authorization.get(repository);
    let response = await send(
      this.#target,
      method,
      url,
      { ...headers, ...(known ? { authorization: known } : {}) },
      body,
    );
    if (response.status === 401) {
      const authorization = await this.#authorize(
        repository,
        String(response.headers['www-authenticate'] ?? ''),
      );
      this.#authorization.set(repository, authorization);
      response = await send(this.#target, method, url, { ...headers, authorization }, body);
    }
    return response;
  }

  async pushBlob(repository: string, data: Buffer): Promise<string> {
    const digest = sha256(data);
    const base = `${this.#target.url}/v2/${repository}/blobs`;
    const head = await this.request(repository, 'HEAD', `${base}/${digest}`, {});
    if (head.status === 200) return digest;
    const started = await this.request(repository, 'POST', `${base}/uploads/`, {});
    const location = started.headers.location;
    if (started.status !== 202 || !location) {
      throw new Error(
        `Starting a blob upload to "${repository}" failed: HTTP ${started.status} ${started.body}`,
      );
    }
    const upload = new URL(location, this.#target.url);
    upload.searchParams.set('digest', digest);
    const done = await this.request(
      repository,
      'PUT',
      upload.href,
      { 'content-type': 'application/octet-stream' },
      data,
    );
    if (done.status !== 201) {
      throw new Error(
        `Uploading blob ${digest} to "${repository}" failed: HTTP ${done.status} ${done.body}`,
      );
    }
    return digest;
  }

  async pushManifest(
    repository: string,
    reference: string,
    mediaType: string,
    body: Buffer,
  ): Promise<string> {
    const url = `${this.#target.url}/v2/${repository}/manifests/${reference}`;
    const response = await this.request(
      repository,
      'PUT',
      url,
      { 'content-type': mediaType },
      body,
    );
    if (response.status !== 201) {
      throw new Error(
        `Pushing manifest "${repository}:${reference}" failed: HTTP ${response.status} ${response.body}`,
      );
    }
    return sha256(body);
  }
}

/** The config blob of a synthetic image, as a build would write it. */
function configFor(image: SyntheticManifest, diffId: string): Buffer {
  if (image.rawConfig !== undefined) return Buffer.from(image.rawConfig);
  const { os, architecture, osVersion, variant } = image.platform;
  return Buffer.from(
    JSON.stringify({
      architecture,
      os,
      ...(osVersion ? { 'os.version': osVersion } : {}),
      ...(variant ? { variant } : {}),
      config: os === 'windows' ? { Cmd: ['c:\\windows\\system32\\cmd.exe'] } : { Cmd: ['/bin/sh'] },
      rootfs: { type: 'layers', diff_ids: [diffId] },
      history: [{ created_by: 'winfleet synthetic image' }],
    }),
  );
}

async function pushManifestImage(
  pusher: Pusher,
  repository: string,
  image: SyntheticManifest,
  label: string,
): Promise<{ digest: string; mediaType: string; size: number; body: Buffer }> {
  const t = types[image.format];
  const layerContent = Buffer.from(
    `synthetic layer of ${label} (${JSON.stringify(image.platform)})\n`,
  );
  const layer = gzipSync(layerContent);
  const config = configFor(image, sha256(layerContent));
  const [layerDigest, configDigest] = [
    await pusher.pushBlob(repository, layer),
    await pusher.pushBlob(repository, config),
  ];
  const manifest = Buffer.from(
    JSON.stringify({
      schemaVersion: 2,
      mediaType: t.manifest,
      config: { mediaType: t.config, digest: configDigest, size: config.length },
      layers: [
        { mediaType: t.layer, digest: layerDigest, size: image.declaredLayerBytes ?? layer.length },
      ],
    }),
  );
  const digest = await pusher.pushManifest(repository, sha256(manifest), t.manifest, manifest);
  return { digest, mediaType: t.manifest, size: manifest.length, body: manifest };
}

function platformJson(platform: SyntheticManifest['platform']): Record<string, string> {
  return {
    architecture: platform.architecture,
    os: platform.os,
    ...(platform.osVersion ? { 'os.version': platform.osVersion } : {}),
    ...(platform.variant ? { variant: platform.variant } : {}),
  };
}

/** Pushes one image (and, for an index, its children) and tags it. */
async function pushImage(
  pusher: Pusher,
  repository: string,
  tag: string,
  image: SyntheticImage,
): Promise<{ digest: string; mediaType: string }> {
  if (image.kind === 'manifest') {
    const pushed = await pushManifestImage(pusher, repository, image, `${repository}:${tag}`);
    // Tagging is putting the same bytes under the tag.
    await pusher.pushManifest(repository, tag, pushed.mediaType, pushed.body);
    return { digest: pushed.digest, mediaType: pushed.mediaType };
  }
  const t = types[image.format];
  const manifests: Record<string, unknown>[] = [];
  for (const [i, entry] of image.entries.entries()) {
    const child = { ...entry.image, format: image.format };
    const pushed = await pushManifestImage(pusher, repository, child, `${repository}:${tag}#${i}`);
    manifests.push({
      mediaType: pushed.mediaType,
      digest: pushed.digest,
      size: pushed.size,
      ...(entry.declarePlatform === false ? {} : { platform: platformJson(child.platform) }),
    });
  }
  if (image.attestation && image.format === 'oci') {
    const subject = manifests[0]!;
    const pushed = await pushManifestImage(
      pusher,
      repository,
      { kind: 'manifest', format: 'oci', platform: { os: 'unknown', architecture: 'unknown' } },
      `${repository}:${tag} attestation`,
    );
    manifests.push({
      mediaType: pushed.mediaType,
      digest: pushed.digest,
      size: pushed.size,
      platform: { architecture: 'unknown', os: 'unknown' },
      annotations: {
        'vnd.docker.reference.digest': subject.digest as string,
        'vnd.docker.reference.type': 'attestation-manifest',
      },
    });
  }
  const index = Buffer.from(JSON.stringify({ schemaVersion: 2, mediaType: t.index, manifests }));
  const digest = await pusher.pushManifest(repository, tag, t.index, index);
  return { digest, mediaType: t.index };
}

/** Pushes every image of `catalog` into the registry at `target`. */
export async function seedImages(
  target: SeedTarget,
  catalog: readonly CatalogEntry[],
  options: SeedOptions = {},
): Promise<SeededImage[]> {
  const pusher = new Pusher(target);
  const prefix = options.pathPrefix?.replace(/^\/+|\/+$/g, '');
  const seeded: SeededImage[] = new Array(catalog.length);
  let next = 0;
  // A few pushes at a time: the registry is local, round trips dominate.
  const worker = async () => {
    for (let i = next++; i < catalog.length; i = next++) {
      const entry = catalog[i]!;
      const repository = prefix ? `${prefix}/${entry.repository}` : entry.repository;
      const { digest, mediaType } = await pushImage(pusher, repository, entry.tag, entry.image);
      seeded[i] = { entry, repository, digest, mediaType };
    }
  };
  await Promise.all(
    Array.from({ length: Math.min(options.concurrency ?? 8, catalog.length) }, worker),
  );
  return seeded;
}
