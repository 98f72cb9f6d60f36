/**
 * One seed per randomised test, always printed and replayable: WINFLEET_SEED=<n> replays a
 * run (property tests pass it to fast-check as `seed`, other random choices draw from
 * `fc.sample` with it). Printed at the start, so a run that hangs or is killed still says
 * which seed it used.
 */

/** The seed for this test: WINFLEET_SEED if set, else a fresh one; printed either way. */
export function testSeed(t: { name: string; diagnostic(message: string): void }): number {
  const given = process.env.WINFLEET_SEED;
  if (given !== undefined && !/^-?\d+$/.test(given.trim())) {
    throw new RangeError(
      `WINFLEET_SEED is "${given}"; set it to an integer, e.g. WINFLEET_SEED=42`,
    );
  }
  const seed = given !== undefined ? Number(given) : Math.floor(Math.random() * 2 ** 31);
  const message = `seed ${seed} (replay with WINFLEET_SEED=${seed})`;
  t.diagnostic(message);
  process.stderr.write(`# ${t.name}: ${message}\n`);
  return seed;
}
