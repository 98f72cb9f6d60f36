/**
 * Writes a new stand-in payload version into the lab's payload directory, so the lab's pool
 * rolls it out: `node sim/lab/next-payload.ts <payload dir> <services version> [<kubelet version>]`
 * (`make lab` prints the command with its directory). Only for the stand-in payload: a real
 * one (WINFLEET_PAYLOAD_DIR) comes from `make payload`.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { writeStandInPayload } from '../testkit/payload.ts';

const usage =
  'usage: node sim/lab/next-payload.ts <payload dir> <services version, e.g. 1.36.5-wf.2> [<kubelet version, e.g. v1.36.5>]';

async function main(argv: string[]): Promise<number> {
  const [dir, version, kubernetesVersion] = argv;
  if (!dir || !version) {
    process.stderr.write(`${usage}\n`);
    return 2;
  }
  if (!/^[0-9A-Za-z][0-9A-Za-z.+-]{0,62}$/.test(version)) {
    process.stderr.write(
      `services version "${version}": use letters, digits, dots, dashes and plus signs (e.g. 1.36.5-wf.2)\n`,
    );
    return 2;
  }
  if (kubernetesVersion !== undefined && !/^v\d+\.\d+\.\d+$/.test(kubernetesVersion)) {
    process.stderr.write(
      `kubelet version "${kubernetesVersion}": write it as vMAJOR.MINOR.PATCH, e.g. v1.36.5\n`,
    );
    return 2;
  }
  if (!(await isStandIn(dir))) {
    process.stderr.write(
      `${dir} does not hold the lab's stand-in payload; build a real one with make payload instead\n`,
    );
    return 1;
  }
  const written = await writeStandInPayload(dir, {
    version,
    ...(kubernetesVersion ? { kubernetesVersion } : {}),
  });
  process.stdout.write(
    `payload ${written.version} (kubelet ${written.kubernetesVersion}) written to ${dir}; the pool rolls it out\n`,
  );
  return 0;
}

async function isStandIn(dir: string): Promise<boolean> {
  const kubelet = await readFile(join(dir, 'kubelet.exe')).catch(() => undefined);
  return kubelet?.subarray(0, 16).toString('latin1') === 'winfleet-standin';
}

process.exitCode = await main(process.argv.slice(2));
