/**
 * The format of a winfleet payload as an OCI artifact: one OCI image manifest whose config is
 * payload.json, byte for byte, and whose layers are the payload's files, raw (neither tarred nor
 * compressed), so that a layer's digest is `sha256:` and the SHA-256 payload.json gives the
 * file. Each layer is titled with the file's name, as ORAS and other artifact tools do.
 *
 * @example
 * {
 *   "schemaVersion": 2,
 *   "mediaType": "application/vnd.oci.image.manifest.v1+json",
 *   "artifactType": "application/vnd.winfleet.payload.v1",
 *   "config": { "mediaType": "application/vnd.winfleet.payload.config.v1+json", "digest": "sha256:…", "size": 2210 },
 *   "layers": [{ "mediaType": "application/vnd.winfleet.payload.file.v1", "digest": "sha256:…",
 *                "size": 123, "annotations": { "org.opencontainers.image.title": "kubelet.exe" } }]
 * }
 */

/** The media types of a payload artifact (the OCI image spec's manifest, winfleet's own rest). */
export const payloadMediaTypes = {
  manifest: 'application/vnd.oci.image.manifest.v1+json',
  artifact: 'application/vnd.winfleet.payload.v1',
  config: 'application/vnd.winfleet.payload.config.v1+json',
  file: 'application/vnd.winfleet.payload.file.v1',
} as const;

/** The annotation that names a layer's file (OCI image spec, pre-defined annotation keys). */
export const titleAnnotation = 'org.opencontainers.image.title';

/** Bounds a payload artifact must keep; anything larger is refused before it is used. */
export const payloadLimits = {
  /** A manifest (registries themselves refuse manifests over 4 MiB). */
  maxManifestBytes: 4 * 1024 * 1024,
  /** payload.json. */
  maxConfigBytes: 1024 * 1024,
  /** Files in one payload. */
  maxFiles: 256,
  /** One file (the real payload's largest, the kubelet, is about 120 MiB). */
  maxFileBytes: 4 * 1024 * 1024 * 1024,
} as const;

/** @package */
export type PayloadLimits = { readonly [K in keyof typeof payloadLimits]: number };
