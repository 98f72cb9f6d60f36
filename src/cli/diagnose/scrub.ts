/**
 * Takes credentials out of text before it goes into a diagnostics bundle. Pure: text in, text
 * out, with a count of what was cut. What it removes:
 * - PEM private key blocks (also unterminated ones, as a cut-off log leaves them) and the
 *   base64 of one (a Secret's data, a kubeconfig's client-key-data), even wrapped over lines;
 * - the values of credential fields in YAML, JSON, INI and flags: token, client-key-data,
 *   client-certificate-data, password, secret, bootstrapToken and the like;
 * - registry credentials: containerd's and Docker's `auth` (base64 of user:password),
 *   `identitytoken`/`identity_token`, and HTTP `Basic <base64>` credentials;
 * - bearer tokens, JWTs (service account tokens) and bootstrap tokens (abcdef.0123456789abcdef);
 * - credentials in URL queries (?token=…, &sig=…) and URL user info (https://user:pass@host);
 * - any literal value the caller knows is secret (a key file it read), wherever it appears.
 * @package
 */
export const redacted = '[REDACTED]';

export interface ScrubResult {
  text: string;
  /** How many values were replaced. */
  redactions: number;
}

export interface ScrubOptions {
  /** Values to remove wherever they appear (at least 8 characters each, else ignored). */
  literals?: readonly string[];
}

const pemPrivateKey =
  /-----BEGIN ([A-Z0-9 ]*PRIVATE KEY)-----[\s\S]*?(?:-----END [A-Z0-9 ]*PRIVATE KEY-----|$(?![\s\S]))/g;

/** Field names whose values are credentials (compared without case, - and _). */
const secretFields = new Set([
  'token',
  'bootstraptoken',
  'tokensecret',
  'idtoken',
  'refreshtoken',
  'accesstoken',
  'authtoken',
  'bearertoken',
  'clientkeydata',
  'clientkey',
  'clientcertificatedata',
  'password',
  'passwd',
  'pwd',
  'secret',
  'clientsecret',
  'apikey',
  'privatekey',
  'sshprivatekey',
  // Registry credentials: containerd's registry.configs."…".auth and Docker's config.json.
  'auth',
  'identitytoken',
  'registrytoken',
]);

// key: value, "key": "value", key=value, --key=value, --key value.
const field =
  /(?<![A-Za-z0-9_-])(["']?)(-{0,2}[A-Za-z][A-Za-z0-9_-]*)\1([ \t]*[:=][ \t]*|[ \t]+(?=["']?[A-Za-z0-9+/=._~-]{8,}))(["']?)([^\s"',;}&]+)\4/g;

const bearer = /\b(Bearer)(\s+)[A-Za-z0-9._~+/-]+=*/gi;
// HTTP Basic credentials: base64 of user:password (a word such as "Basic authentication" is not).
const basic = /\b(Basic)(\s+)([A-Za-z0-9+/]{4,}={0,2})(?![A-Za-z0-9+/=])/gi;
const jwt = /\beyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]*/g;
const bootstrapToken = /(?<![A-Za-z0-9])[a-z0-9]{6}\.[a-z0-9]{16}(?![A-Za-z0-9])/g;
const urlQuery =
  /([?&](?:token|access_token|id_token|password|passwd|secret|sig|signature|key|apikey|api_key|code|auth)=)([^&\s"'#<>]+)/gi;
const urlUserInfo = /(\b[a-z][a-z0-9+.-]*:\/\/[^\s/:@"']+:)([^\s/@"']+)(@)/gi;
// Runs of base64 (possibly wrapped: a line break, or an escaped \n, then more base64).
const base64Run =
  /[A-Za-z0-9+/]{16,}={0,2}(?:(?:\r?\n|\\r\\n|\\n)[ \t]*[A-Za-z0-9+/]{16,}={0,2})*/g;

/** Whether decoded bytes hold a credential. */
function secretContent(decoded: string): boolean {
  return (
    /PRIVATE KEY/.test(decoded) ||
    /-----BEGIN/.test(decoded) ||
    new RegExp(bootstrapToken.source).test(decoded) ||
    /\b(token|client-key-data|password)\s*:/.test(decoded)
  );
}

export function scrub(input: string, options: ScrubOptions = {}): ScrubResult {
  let count = 0;
  let text = input;
  for (const literal of options.literals ?? []) {
    if (literal.length < 8) continue;
    const parts = text.split(literal);
    count += parts.length - 1;
    text = parts.join(redacted);
    // The literal with its line breaks escaped, as JSON or a log line would print it.
    for (const escaped of [literal.replaceAll('\r\n', '\\r\\n'), literal.replaceAll('\n', '\\n')]) {
      if (escaped === literal) continue;
      const more = text.split(escaped);
      count += more.length - 1;
      text = more.join(redacted);
    }
  }
  text = text.replace(pemPrivateKey, (_m, kind: string) => {
    count++;
    return `-----BEGIN ${kind}-----${redacted}-----END ${kind}-----`;
  });
  text = text.replace(field, (whole, q1, name: string, sep, q2, value: string) => {
    const key = name.replace(/^-+/, '').replace(/[-_]/g, '').toLowerCase();
    if (!(secretFields.has(key) || /(password|passwd|secret|token)$/.test(key))) return whole;
    if (value === redacted) return whole;
    // "token: [REDACTED]" already; a value that is a file path names a file, not a secret.
    if (/^[A-Za-z]:\\|^\//.test(value) && !/^[A-Za-z0-9+/]{40,}={0,2}$/.test(value)) return whole;
    count++;
    return `${q1}${name}${q1}${sep}${q2}${redacted}${q2}`;
  });
  text = text.replace(bearer, (_m, word, space) => {
    count++;
    return `${word}${space}${redacted}`;
  });
  text = text.replace(basic, (whole, word, space, value: string) => {
    if (!/^[^\s:]*:/.test(Buffer.from(value, 'base64').toString('latin1'))) return whole;
    count++;
    return `${word}${space}${redacted}`;
  });
  text = text.replace(jwt, () => {
    count++;
    return redacted;
  });
  text = text.replace(bootstrapToken, () => {
    count++;
    return redacted;
  });
  text = text.replace(urlQuery, (_m, key) => {
    count++;
    return `${key}${redacted}`;
  });
  text = text.replace(urlUserInfo, (_m, before, _pass, at) => {
    count++;
    return `${before}${redacted}${at}`;
  });
  text = text.replace(base64Run, (run) => {
    const compact = run.replace(/\\r\\n|\\n|\s/g, '');
    if (compact.length < 24) return run;
    const decoded = Buffer.from(compact, 'base64').toString('latin1');
    if (!secretContent(decoded)) return run;
    count++;
    return redacted;
  });
  return { text, redactions: count };
}
