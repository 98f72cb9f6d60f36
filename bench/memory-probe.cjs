/**
 * A memory probe for a Node process, loaded with `--require bench/memory-probe.cjs` (works for
 * ESM and CommonJS programs alike) and enabled by WINFLEET_MEMORY_PROBE=<file>: on SIGUSR2 it
 * writes one JSON line to that file with what the process's memory is made of:
 *
 * - rss and its kinds from /proc/self/status (RssAnon: heap and mallocs, RssFile: the mapped
 *   node binary and libraries);
 * - process.memoryUsage() (V8 heap used/total, external, arrayBuffers);
 * - v8.getHeapSpaceStatistics() (new, old, code, large-object spaces …) and
 *   v8.getHeapCodeStatistics() (bytecode and compiled code, source and metadata);
 * - the modules loaded (counted with module.registerHooks: every require and import) and the
 *   bytes of their source, by package.
 *
 * With WINFLEET_MEMORY_PROBE_AT_EXIT=<ms>, the first process.exit waits that long, samples, then
 * exits (see below).
 *
 * With WINFLEET_MEMORY_PROBE_SNAPSHOT=<file>, SIGUSR2 also writes a heap snapshot there (open
 * it in Chrome DevTools, Memory tab). A bench tool, never part of the product.
 */
'use strict';
const fs = require('node:fs');
const v8 = require('node:v8');
const nodeModule = require('node:module');

const out = process.env.WINFLEET_MEMORY_PROBE;
if (out) {
  /** @type {Map<string, number>} */
  const sources = new Map();
  const note = (url, source) => {
    if (sources.has(url)) return;
    const bytes =
      source == null ? 0 : typeof source === 'string' ? source.length : source.byteLength;
    sources.set(url, bytes);
  };
  nodeModule.registerHooks({
    load(url, context, nextLoad) {
      const result = nextLoad(url, context);
      note(url, result.source);
      return result;
    },
  });
  // A bundle is one file: count what it holds too (the CommonJS loader's own cache).
  const packageOf = (url) => {
    if (url.startsWith('node:')) return 'node:builtin';
    const at = url.lastIndexOf('/node_modules/');
    if (at < 0) return url.endsWith('.cjs') ? 'bundle' : 'winfleet';
    const rest = url.slice(at + '/node_modules/'.length).split('/');
    return rest[0].startsWith('@') ? `${rest[0]}/${rest[1]}` : rest[0];
  };
  const procStatus = () => {
    const text = fs.readFileSync('/proc/self/status', 'utf8');
    const kb = (name) => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(text)?.[1] ?? 0);
    return {
      rss: kb('VmRSS') * 1024,
      rssAnon: kb('RssAnon') * 1024,
      rssFile: kb('RssFile') * 1024,
      rssShmem: kb('RssShmem') * 1024,
      threads: Number(/^Threads:\s+(\d+)/m.exec(text)?.[1] ?? 0),
    };
  };
  const sample = () => {
    const byPackage = {};
    for (const [url, bytes] of sources) {
      const name = packageOf(url);
      const entry = byPackage[name] ?? { modules: 0, sourceBytes: 0 };
      entry.modules += 1;
      entry.sourceBytes += bytes;
      byPackage[name] = entry;
    }
    return {
      at: new Date().toISOString(),
      uptimeS: process.uptime(),
      proc: procStatus(),
      memoryUsage: process.memoryUsage(),
      heapSpaces: Object.fromEntries(
        v8
          .getHeapSpaceStatistics()
          .map((s) => [
            s.space_name,
            { used: s.space_used_size, size: s.space_size, physical: s.physical_space_size },
          ]),
      ),
      heapCode: v8.getHeapCodeStatistics(),
      modules: { loaded: sources.size, requireCache: Object.keys(require.cache).length },
      byPackage,
    };
  };
  const write = () => {
    fs.appendFileSync(out, `${JSON.stringify(sample())}\n`);
    const snapshot = process.env.WINFLEET_MEMORY_PROBE_SNAPSHOT;
    if (snapshot) v8.writeHeapSnapshot(snapshot);
  };
  process.on('SIGUSR2', write);
  // WINFLEET_MEMORY_PROBE_AT_EXIT=<ms>: a program that loads everything and exits (`--help`)
  // is sampled at its first process.exit, after sleeping that long (the thread blocks: nothing
  // else runs), then exits: its memory once loaded, before it does anything.
  const holdMs = Number(process.env.WINFLEET_MEMORY_PROBE_AT_EXIT ?? 0);
  if (holdMs > 0) {
    const exit = process.exit.bind(process);
    process.exit = (code) => {
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, holdMs);
      write();
      exit(code);
    };
  }
}
