/**
 * Debian's names and versions (Debian Policy 5.6.1 and 5.6.12): what a declaration may name, and the
 * order dpkg puts two versions in, so that a plan can say upgrade or downgrade without asking dpkg once
 * a package.
 */

/** Why a name is not a Debian package name, or nothing. */
export function packageNameProblem(name: string): string | undefined {
  if (!/^[a-z0-9][a-z0-9+.-]+$/.test(name)) return `'${name}' is not a Debian package name: at least two characters, lower-case letters, digits, + - and ., starting with a letter or digit`;
  return undefined;
}

/** Why a version is not a Debian version ([epoch:]upstream[-revision]), or nothing. */
export function versionProblem(version: string): string | undefined {
  const bad = `'${version}' is not a Debian version ([epoch:]upstream[-revision], the upstream part starting with a digit)`;
  const m = /^(?:(\d+):)?(.+?)(?:-([A-Za-z0-9+.~]+))?$/.exec(version);
  if (!m) return bad;
  const [, , upstream, revision] = m;
  const allowed = revision === undefined ? /^[0-9][A-Za-z0-9.+~]*$/ : /^[0-9][A-Za-z0-9.+~-]*$/;
  if (!allowed.test(upstream!)) return bad;
  if (m[1] === undefined && version.includes(':')) return bad;
  return undefined;
}

/** The order of one character in dpkg's comparison of the parts that are not digits: ~ before everything, even the end. */
function order(c: string | undefined): number {
  if (c === undefined) return 0;
  if (c === '~') return -1;
  if (/[A-Za-z]/.test(c)) return c.charCodeAt(0);
  return c.charCodeAt(0) + 256;
}

function compareFragment(a: string, b: string): number {
  let i = 0;
  let j = 0;
  while (i < a.length || j < b.length) {
    let diff = 0;
    while ((i < a.length && !/\d/.test(a[i]!)) || (j < b.length && !/\d/.test(b[j]!))) {
      const ac = i < a.length && !/\d/.test(a[i]!) ? a[i] : undefined;
      const bc = j < b.length && !/\d/.test(b[j]!) ? b[j] : undefined;
      if (order(ac) !== order(bc)) return order(ac) - order(bc);
      if (ac !== undefined) i++;
      if (bc !== undefined) j++;
    }
    while (a[i] === '0') i++;
    while (b[j] === '0') j++;
    while (i < a.length && /\d/.test(a[i]!) && j < b.length && /\d/.test(b[j]!)) {
      if (diff === 0) diff = a.charCodeAt(i) - b.charCodeAt(j);
      i++;
      j++;
    }
    if (i < a.length && /\d/.test(a[i]!)) return 1;
    if (j < b.length && /\d/.test(b[j]!)) return -1;
    if (diff !== 0) return diff;
  }
  return 0;
}

function parts(version: string): [number, string, string] {
  const colon = version.indexOf(':');
  const epoch = colon > 0 ? Number(version.slice(0, colon)) : 0;
  const rest = colon > 0 ? version.slice(colon + 1) : version;
  const dash = rest.lastIndexOf('-');
  return dash >= 0 ? [epoch, rest.slice(0, dash), rest.slice(dash + 1)] : [epoch, rest, ''];
}

/** dpkg --compare-versions, as a sign: below zero when `a` is older than `b`. */
export function compareVersions(a: string, b: string): number {
  const [ea, ua, ra] = parts(a);
  const [eb, ub, rb] = parts(b);
  if (ea !== eb) return ea - eb;
  return compareFragment(ua, ub) || compareFragment(ra, rb);
}
