/**
 * `make krew` builds the CLI's single executable, its krew archive and manifest; the archive is
 * checked as krew would install it, and the plugin runs through kubectl's plugin discovery.
 * About 40 s (two builds: the second proves the archive is reproducible).
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { promisify } from 'node:util';
import { gunzipSync } from 'node:zlib';
import { extract } from 'tar-stream';
import packageJson from '../package.json' with { type: 'json' };
import { type ArchiveEntry, manifestProblems } from './krew-manifest.ts';
import { repoRoot } from './node-build.ts';

const run = promisify(execFile);
/** The Makefile's stamp of a done `npm ci` (its STAMP). */
const installedStamp = 'node_modules/.winfleet-installed';
const work = await mkdtemp(join(tmpdir(), 'winfleet-krew-'));
after(() => rm(work, { recursive: true, force: true }));

/**
 * `make krew`, with node_modules taken as installed (-o its stamp): the target's `deps` would
 * otherwise run `npm ci` when package.json is newer than the stamp, replacing node_modules
 * under every test file running beside this one. `make test` installed it before any test.
 */
async function make(out: string): Promise<string[]> {
  const args = ['--no-print-directory', '-s', '-o', installedStamp, 'krew', `KREW_OUT=${out}`];
  const { stdout } = await run('make', args, {
    cwd: repoRoot,
    maxBuffer: 1 << 20,
  });
  return stdout.trim().split('\n');
}

async function entries(archive: Buffer): Promise<(ArchiveEntry & { content: Buffer })[]> {
  const found: (ArchiveEntry & { content: Buffer })[] = [];
  const tar = extract();
  tar.on('entry', (header, stream, next) => {
    const chunks: Buffer[] = [];
    stream.on('data', (c: unknown) => chunks.push(c as Buffer));
    stream.on('end', () => {
      found.push({
        path: header.name,
        executable: ((header.mode ?? 0) & 0o111) !== 0,
        content: Buffer.concat(chunks),
      });
      next();
    });
  });
  await new Promise<void>((resolve, reject) => {
    tar.on('finish', resolve);
    tar.on('error', reject);
    tar.end(gunzipSync(archive));
  });
  return found;
}

test('make krew: a manifest krew accepts, for an archive whose plugin runs under kubectl', async () => {
  const [binary, archivePath, manifestPath] = await make(join(work, 'a'));
  assert.ok(binary && archivePath && manifestPath);
  const archive = await readFile(archivePath);
  const sha = createHash('sha256').update(archive).digest('hex');
  const manifest = await readFile(manifestPath, 'utf8');
  const files = await entries(archive);
  assert.deepEqual(files.map((f) => f.path).sort(), [
    'LICENSE',
    'LICENSE.node',
    'kubectl-winfleet',
  ]);
  assert.deepEqual(
    manifestProblems(manifest, 'winfleet', {
      sha256: sha,
      entries: files,
      platform: { os: 'linux', arch: 'amd64' },
    }),
    [],
  );
  assert.match(manifest, new RegExp(`sha256: ${sha}`));
  assert.match(manifest, new RegExp(`version: v${packageJson.version.replaceAll('.', '\\.')}`));

  // As krew installs it: the archive's files in a directory on PATH, found by kubectl.
  const bin = join(work, 'bin');
  await run('mkdir', ['-p', bin]);
  await run('tar', ['-xzf', archivePath, '-C', bin]);
  const env = { ...process.env, PATH: `${bin}:${process.env.PATH}` };
  const version = await run('kubectl', ['winfleet', 'version'], { env });
  assert.equal(version.stdout, `winfleet ${packageJson.version}\n`);
  const help = await run('kubectl', ['winfleet', '--help'], { env });
  assert.match(help.stdout, /^Usage: kubectl winfleet /);
  await assert.rejects(
    run('kubectl', ['winfleet', 'no-such-command'], { env }),
    (error: { code?: number; stderr?: string }) => {
      assert.equal(error.code, 2, 'a usage error exits 2 through kubectl too');
      assert.match(error.stderr ?? '', /unknown command 'no-such-command'/);
      return true;
    },
  );

  // Reproducible: a second build gives the same archive, byte for byte.
  const [, again] = await make(join(work, 'b'));
  assert.ok(again);
  assert.equal(
    createHash('sha256')
      .update(await readFile(again))
      .digest('hex'),
    sha,
  );
});
