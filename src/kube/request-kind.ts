/**
 * The Kubernetes verb and resource of an API request, from its method and path, as the API
 * server's own request attributes name them: get, list, watch, create, update, patch, delete,
 * deletecollection; the resource's plural with its subresource (`pods/eviction`,
 * `windowshosts/status`). A path outside /api and /apis (`/version`, `/healthz`) or a
 * discovery document is a non-resource request: its verb is the method, its resource the path.
 */
export interface RequestKind {
  verb: string;
  resource: string;
}

/** Subresources of a Namespace itself: `namespaces/<name>/status`, not a resource inside it. */
const namespaceSubresources = new Set(['status', 'finalize']);

const writeVerbs: Record<string, string> = { POST: 'create', PUT: 'update', PATCH: 'patch' };

function isWatchQuery(query: string): boolean {
  const watch = new URLSearchParams(query).get('watch');
  return watch === 'true' || watch === '1';
}

/** @package */
export function requestKind(method: string, pathAndQuery: string): RequestKind {
  const upper = method.toUpperCase();
  const queryAt = pathAndQuery.indexOf('?');
  const path = queryAt < 0 ? pathAndQuery : pathAndQuery.slice(0, queryAt);
  const query = queryAt < 0 ? '' : pathAndQuery.slice(queryAt + 1);
  const parts = path.split('/').filter((p) => p !== '');
  // /api/<version>/... or /apis/<group>/<version>/...
  const prefix = parts[0] === 'api' ? 2 : parts[0] === 'apis' ? 3 : 0;
  let rest = prefix > 0 ? parts.slice(prefix) : [];
  if (rest.length === 0) return { verb: upper.toLowerCase(), resource: parts.join('/') || '/' };
  // The legacy /watch/ prefix (…/v1/watch/pods).
  let watch = isWatchQuery(query);
  if (rest[0] === 'watch') {
    watch = true;
    rest = rest.slice(1);
  }
  // namespaces/<ns>/<resource>/… is a namespaced resource; namespaces/<ns>[/status] the Namespace.
  if (rest[0] === 'namespaces' && rest.length > 2 && !namespaceSubresources.has(rest[2] ?? '')) {
    rest = rest.slice(2);
  }
  const [plural = '', name, subresource] = rest;
  const resource = subresource ? `${plural}/${subresource}` : plural;
  if (upper === 'GET' || upper === 'HEAD') {
    return { verb: watch ? 'watch' : name ? 'get' : 'list', resource };
  }
  if (upper === 'DELETE') return { verb: name ? 'delete' : 'deletecollection', resource };
  return { verb: writeVerbs[upper] ?? upper.toLowerCase(), resource };
}
