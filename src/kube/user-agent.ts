/**
 * The User-Agent each winfleet process sends the API server, naming the program and
 * winfleet's version (package.json's, read at build time by the bundler and at run time
 * otherwise), so that the API server's audit log and metrics tell them apart.
 */
import packageJson from '../../package.json' with { type: 'json' };

export const winfleetVersion: string = packageJson.version;

export const userAgents = {
  operator: `winfleet-operator/${winfleetVersion}`,
  agent: `winfleet-agent/${winfleetVersion}`,
  cli: `winfleet/${winfleetVersion}`,
} as const;
