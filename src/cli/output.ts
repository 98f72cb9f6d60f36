/**
 * How commands print: -o table|wide|json|yaml as kubectl does, aligned columns, and colour only
 * where the stream is a terminal that wants it (util.styleText checks isTTY, NO_COLOR and
 * FORCE_COLOR).
 */
import { styleText } from 'node:util';
import { Option } from 'commander';
import { stringify } from 'yaml';

export const outputFormats = ['table', 'wide', 'json', 'yaml'] as const;
export type OutputFormat = (typeof outputFormats)[number];

/** The -o/--output option, limited to `formats`. */
export function outputOption(formats: readonly OutputFormat[] = outputFormats): Option {
  return new Option('-o, --output <format>', 'output format').choices(formats).default('table');
}

/** The data as -o json or -o yaml print it. */
export function formatData(format: 'json' | 'yaml', data: unknown): string {
  return format === 'json' ? `${JSON.stringify(data, null, 2)}\n` : stringify(data);
}

/** kubectl's table: upper-case headers, columns three spaces apart, no trailing blanks. */
export function formatTable(headers: string[], rows: string[][]): string {
  const widths = headers.map((h, i) =>
    Math.max(h.length, ...rows.map((row) => visibleLength(row[i] ?? ''))),
  );
  const line = (cells: string[]) =>
    cells
      .map((cell, i) =>
        i === cells.length - 1 ? cell : cell + ' '.repeat(widths[i]! - visibleLength(cell) + 3),
      )
      .join('')
      .trimEnd();
  return `${[line(headers.map((h) => h.toUpperCase())), ...rows.map(line)].join('\n')}\n`;
}

// biome-ignore lint/suspicious/noControlCharactersInRegex: ANSI colour sequences are stripped on purpose
const ansi = /\u001b\[[0-9;]*m/g;
function visibleLength(text: string): number {
  return text.replace(ansi, '').length;
}

export type Tone = 'good' | 'bad' | 'warn' | 'dim';
const toneStyle = { good: 'green', bad: 'red', warn: 'yellow', dim: 'gray' } as const;

/** `text` coloured for `stream` when it is a terminal that takes colour, else as is. */
export function paint(
  tone: Tone,
  text: string,
  stream: NodeJS.WriteStream = process.stdout,
): string {
  return styleText(toneStyle[tone], text, { stream, validateStream: true });
}
