/**
 * index.html of a diagnostics bundle: what was collected, its sizes, and what failed and why,
 * as one self-contained page (inline style, no script, nothing fetched). Every text from the
 * cluster or a host is HTML-escaped.
 */

export type ItemStatus = 'ok' | 'truncated' | 'failed';

export interface IndexItem {
  /** Path in the bundle (a link), or the item's name when it failed and has no file. */
  path: string;
  title: string;
  bytes: number;
  status: ItemStatus;
  /** Why it failed, or what was cut. */
  note?: string;
}

export interface IndexSection {
  title: string;
  /** Set when the whole section could not be gathered (cluster unreachable, host down). */
  failure?: string;
  /** Lines about the section as a whole (a host's presented SSH key). */
  facts?: string[];
  items: IndexItem[];
}

export interface IndexSummary {
  startedAt: Date;
  finishedAt: Date;
  cliVersion: string;
  /** What the bundle was asked for (the command line, scrubbed). */
  command: string;
  sections: IndexSection[];
}

/** @package */
export function escapeHtml(text: string): string {
  return text
    .replaceAll('&', '&amp;')
    .replaceAll('<', '&lt;')
    .replaceAll('>', '&gt;')
    .replaceAll('"', '&quot;')
    .replaceAll("'", '&#39;');
}

/** A relative link to a bundle path, each segment percent-encoded. */
function href(path: string): string {
  return path.split('/').map(encodeURIComponent).join('/');
}

export function formatBytes(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KiB`;
  return `${(bytes / 1024 / 1024).toFixed(1)} MiB`;
}

const style = `body{font:14px/1.4 system-ui,sans-serif;margin:2em;color:#222}
table{border-collapse:collapse;margin-bottom:1.5em}td,th{border:1px solid #ccc;padding:.25em .6em;text-align:left;vertical-align:top}
th{background:#f3f3f3}.failed{color:#b00020;font-weight:600}.truncated{color:#8a5a00}.ok{color:#1b5e20}
.note{white-space:pre-wrap}`;

export function renderIndex(summary: IndexSummary): string {
  const failures = summary.sections.filter(
    (s) => s.failure || s.items.some((i) => i.status === 'failed'),
  ).length;
  const total = summary.sections.reduce((n, s) => n + s.items.reduce((m, i) => m + i.bytes, 0), 0);
  const sections = summary.sections.map((section) => {
    const rows = section.items.map((item) => {
      const name =
        item.status === 'failed'
          ? escapeHtml(item.path)
          : `<a href="${escapeHtml(href(item.path))}">${escapeHtml(item.path)}</a>`;
      return `<tr><td>${name}</td><td>${escapeHtml(item.title)}</td><td>${escapeHtml(formatBytes(item.bytes))}</td><td class="${item.status}">${item.status}</td><td class="note">${escapeHtml(item.note ?? '')}</td></tr>`;
    });
    return [
      `<h2>${escapeHtml(section.title)}</h2>`,
      ...(section.facts ?? []).map((fact) => `<p class="fact">${escapeHtml(fact)}</p>`),
      section.failure
        ? `<p class="failed">Not collected: <span class="note">${escapeHtml(section.failure)}</span></p>`
        : '',
      rows.length
        ? `<table><tr><th>File</th><th>What</th><th>Size</th><th>Status</th><th>Note</th></tr>${rows.join('')}</table>`
        : '',
    ].join('\n');
  });
  return `<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>winfleet diagnostics</title>
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'">
<style>${style}</style></head><body>
<h1>winfleet diagnostics</h1>
<p>Collected ${escapeHtml(summary.startedAt.toISOString())} to ${escapeHtml(summary.finishedAt.toISOString())} by winfleet ${escapeHtml(summary.cliVersion)}: <code>${escapeHtml(summary.command)}</code></p>
<p>${summary.sections.length} sections, ${escapeHtml(formatBytes(total))} in all; ${failures === 0 ? '<span class="ok">everything was collected</span>' : `<span class="failed">${failures} section(s) with failures</span>`}. Credentials were scrubbed from every file.</p>
${sections.join('\n')}
</body></html>
`;
}
