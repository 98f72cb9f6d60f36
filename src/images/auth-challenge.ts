/**
 * Parsing of WWW-Authenticate challenges (RFC 7235) as registries send them:
 * `Bearer realm="https://auth.example.com/token",service="registry",scope="repository:app:pull"`
 * or `Basic realm="Registry"`. A header may hold several challenges.
 */

/** One challenge: its scheme in lowercase and its parameters (names in lowercase). */
export interface AuthChallenge {
  scheme: string;
  params: Record<string, string>;
}

const tokenChar = /[!#$%&'*+.^_`|~0-9A-Za-z-]/;

/** Parses a WWW-Authenticate header value; malformed parts end the parse, never throw. */
export function parseAuthChallenges(header: string | string[] | undefined): AuthChallenge[] {
  if (header === undefined) return [];
  if (Array.isArray(header)) return header.flatMap((h) => parseAuthChallenges(h));
  const challenges: AuthChallenge[] = [];
  let i = 0;
  const n = header.length;
  const skipSpace = () => {
    while (i < n && (header[i] === ' ' || header[i] === '\t')) i++;
  };
  const readToken = () => {
    const start = i;
    while (i < n && tokenChar.test(header[i]!)) i++;
    return header.slice(start, i);
  };
  // Each step consumes at least one character, so the loop ends within n iterations.
  while (i < n) {
    skipSpace();
    if (header[i] === ',') {
      i++;
      continue;
    }
    const scheme = readToken();
    if (scheme === '') break;
    const challenge: AuthChallenge = { scheme: scheme.toLowerCase(), params: {} };
    challenges.push(challenge);
    for (;;) {
      skipSpace();
      const mark = i;
      const name = readToken();
      skipSpace();
      if (name === '' || header[i] !== '=') {
        // Not a parameter: the next challenge's scheme (or a token68, read as one).
        i = mark;
        break;
      }
      i++; // '='
      skipSpace();
      let value = '';
      if (header[i] === '"') {
        i++;
        while (i < n && header[i] !== '"') {
          if (header[i] === '\\' && i + 1 < n) i++;
          value += header[i];
          i++;
        }
        i++; // closing quote
      } else {
        value = readToken();
      }
      challenge.params[name.toLowerCase()] = value;
      skipSpace();
      if (header[i] === ',') {
        i++;
        continue;
      }
      break;
    }
  }
  return challenges;
}
