/** The CLI's version: package.json's, read at build time by the bundler and at run time otherwise. */
import packageJson from '../../package.json' with { type: 'json' };

export const cliVersion: string = packageJson.version;
