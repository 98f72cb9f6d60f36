/**
 * Reads the Prometheus text exposition format (what /metrics serves) into samples: the
 * benchmarks scrape the operator this way, and tests read the gauges an operator sets (a signal
 * the product emits, rather than a sleep). Comments and blank lines are skipped; a line that is
 * not a sample is an error, so a format change is noticed rather than read as zero.
 */

export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

const sampleLine = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)(?:\s+\d+)?$/;
const labelPair = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"\s*(?:,|$)/y;

function unescapeLabel(value: string): string {
  return value.replace(/\\(["\\n])/g, (_, c: string) => (c === 'n' ? '\n' : c));
}

function parseLabels(text: string, line: string): Record<string, string> {
  const labels: Record<string, string> = {};
  labelPair.lastIndex = 0;
  while (labelPair.lastIndex < text.length) {
    const start = labelPair.lastIndex;
    const match = labelPair.exec(text);
    if (!match || match.index !== start)
      throw new Error(`Unreadable labels in metrics line: ${line}`);
    labels[match[1]!] = unescapeLabel(match[2]!);
  }
  return labels;
}

function parseValue(text: string, line: string): number {
  if (text === '+Inf') return Number.POSITIVE_INFINITY;
  if (text === '-Inf') return Number.NEGATIVE_INFINITY;
  if (text === 'NaN') return Number.NaN;
  const value = Number(text);
  if (text === '' || Number.isNaN(value))
    throw new Error(`Unreadable value in metrics line: ${line}`);
  return value;
}

/** Every sample in a /metrics answer. */
export function parseMetricsText(text: string): Sample[] {
  const samples: Sample[] = [];
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) continue;
    const match = sampleLine.exec(line);
    if (!match) throw new Error(`Unreadable metrics line: ${line}`);
    samples.push({
      name: match[1]!,
      labels: match[2] ? parseLabels(match[2], line) : {},
      value: parseValue(match[3]!, line),
    });
  }
  return samples;
}

/** The samples of one metric. */
export function samplesOf(samples: Sample[], name: string): Sample[] {
  return samples.filter((s) => s.name === name);
}

/** The sum of one metric's samples (0 when it has none). */
export function sumOf(samples: Sample[], name: string): number {
  return samplesOf(samples, name).reduce((total, s) => total + s.value, 0);
}

/** The operator's /metrics at `port` on loopback (its status server), parsed. */
export async function scrapeMetrics(port: number): Promise<Sample[]> {
  const response = await fetch(`http://127.0.0.1:${port}/metrics`);
  if (!response.ok) throw new Error(`GET /metrics on port ${port} answered ${response.status}`);
  return parseMetricsText(await response.text());
}
