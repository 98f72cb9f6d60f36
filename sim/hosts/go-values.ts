/**
 * Values as the Go programs the simulated hosts stand in for read them: strconv.ParseBool,
 * time.ParseDuration and resource.ParseQuantity (k8s.io/apimachinery). One parser each, shared
 * by every stand-in, so two programs never disagree about the same text.
 */

const goBooleans: Readonly<Record<string, boolean>> = {
  '1': true,
  t: true,
  T: true,
  TRUE: true,
  true: true,
  True: true,
  '0': false,
  f: false,
  F: false,
  FALSE: false,
  false: false,
  False: false,
};

/** strconv.ParseBool: true or false; undefined when Go refuses the text. */
export function parseGoBool(text: string): boolean | undefined {
  return Object.hasOwn(goBooleans, text) ? goBooleans[text] : undefined;
}

const msPerUnit: Readonly<Record<string, number>> = {
  ns: 1e-6,
  us: 1e-3,
  µs: 1e-3,
  μs: 1e-3,
  ms: 1,
  s: 1e3,
  m: 6e4,
  h: 3.6e6,
};

/** time.ParseDuration ("1m30s", "168h", "1.5m", "0"), in ms; undefined when it is not one. */
export function parseGoDuration(text: string): number | undefined {
  if (text === '0' || text === '+0' || text === '-0') return 0;
  const sign = text.startsWith('-') ? -1 : 1;
  const body = /^[-+]/.test(text) ? text.slice(1) : text;
  if (body === '') return undefined;
  const part = /(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h)/y;
  let total = 0;
  while (part.lastIndex < body.length) {
    const match = part.exec(body);
    if (!match) return undefined;
    total += Number(match[1]) * msPerUnit[match[2]!]!;
  }
  return sign * total;
}

const binarySuffixes: Readonly<Record<string, number>> = {
  Ki: 2 ** 10,
  Mi: 2 ** 20,
  Gi: 2 ** 30,
  Ti: 2 ** 40,
  Pi: 2 ** 50,
  Ei: 2 ** 60,
};

const decimalSuffixes: Readonly<Record<string, number>> = {
  n: 1e-9,
  u: 1e-6,
  m: 1e-3,
  k: 1e3,
  M: 1e6,
  G: 1e9,
  T: 1e12,
  P: 1e15,
  E: 1e18,
};

/**
 * resource.ParseQuantity: a signed number and one suffix (binary SI "Ki".."Ei", decimal SI
 * "n".."E", or a decimal exponent "e3"), as a number (bytes for memory, cores for CPU);
 * undefined when it is not one.
 */
export function parseQuantity(text: string): number | undefined {
  const match = /^([+-]?)(\d+(?:\.\d*)?|\.\d+)(Ki|Mi|Gi|Ti|Pi|Ei|[eE][+-]?\d+|[numkMGTPE])?$/.exec(
    text,
  );
  if (!match) return undefined;
  const suffix = match[3] ?? '';
  const factor =
    binarySuffixes[suffix] ??
    decimalSuffixes[suffix] ??
    (/^[eE]/.test(suffix) ? 10 ** Number(suffix.slice(1)) : 1);
  return (match[1] === '-' ? -1 : 1) * Number(match[2]) * factor;
}
