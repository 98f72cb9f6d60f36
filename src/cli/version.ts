/** The CLI's version: winfleet's (package.json's), as its User-Agent names it. */
import { winfleetVersion } from '../kube/user-agent.ts';

export const cliVersion: string = winfleetVersion;
