/**
 * Whether two values are the same JSON document, whatever the order of their object keys:
 * the API server returns a custom resource's fields in its own (sorted) order, so comparing
 * JSON text would see a change where there is none, and a controller would write again.
 * Members whose value is undefined are absent, as in JSON.
 */
export function sameJson(a: unknown, b: unknown): boolean {
  return canonicalJson(a) === canonicalJson(b);
}

/** JSON text with every object's keys sorted. */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) => {
    if (!v || typeof v !== 'object' || Array.isArray(v)) return v;
    const sorted: Record<string, unknown> = {};
    for (const key of Object.keys(v).sort()) sorted[key] = (v as Record<string, unknown>)[key];
    return sorted;
  });
}
