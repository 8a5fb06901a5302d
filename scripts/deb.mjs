// The Debian package of a release: `debPackage({ executable, version, arch, out })` writes
// OUT/mesh-host_VERSION_ARCH.deb with dpkg-deb (Debian's own tool, no debhelper): the single executable
// as /usr/bin/mesh-host and /usr/bin/meshctl (a link: the same file run by that name), the systemd unit,
// the OpenRC script (/etc/init.d/mesh-host, a conffile), the man pages made from the programs' specs,
// the copyright and changelog, and maintainer scripts that
//   - make the state directory (0700) and the configuration's folder, and write no configuration: genesis
//     writes host.json from a bundle, and an operator's is never touched;
//   - enable the service, and start (or, on an upgrade, restart) it only when the host is enrolled, and
//     only through invoke-rc.d / deb-systemd-invoke, which ask policy-rc.d first;
//   - on remove, stop it and keep the state; on purge, remove the state directory and host.json, the
//     files mesh-host itself writes, and the configuration's folder only when nothing else is left in it.
// apt updates a host installed so: its unit runs `mesh-host run`, with no launcher.
import { execFileSync } from 'node:child_process';
import { chmodSync, copyFileSync, lstatSync, mkdirSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { gzipSync } from 'node:zlib';
import { join, relative } from 'node:path';
import { pathToFileURL } from 'node:url';
import { commitTime } from './build-info.mjs';
import { writeManPages } from './man-pages.mjs';
import { openrcScript, systemdUnit } from '../dist/src/host/release/release-units.js';
import { CONFIG_DIR, DEFAULT_CONFIG, DEFAULT_STATE_DIR } from '../dist/src/core/system/default-paths.js';

/** Debian's names for Node's architectures. */
export const DEBIAN_ARCH = { x64: 'amd64', arm64: 'arm64' };

const MAINTAINER = 'mesh-host maintainers <mesh-host@users.noreply.github.com>';
const UNIT = '/lib/systemd/system/mesh-host.service';
const INIT_SCRIPT = '/etc/init.d/mesh-host';

/** Debian's version of the release's: a pre-release (0.2.0-rc.1) sorts before its release (0.2.0~rc.1). */
export const debianVersion = (version) => version.replace(/-/g, '~');

const postinst = `#!/bin/sh
# mesh-host's postinst: the state directory, the service enabled, and started only when the host is
# enrolled (genesis wrote ${DEFAULT_CONFIG}); invoke-rc.d and deb-systemd-invoke ask policy-rc.d first.
set -e
if [ "$1" = configure ]; then
\tif [ ! -d ${DEFAULT_STATE_DIR} ]; then mkdir -p ${DEFAULT_STATE_DIR}; fi
\tchmod 0700 ${DEFAULT_STATE_DIR}
\tif [ ! -d ${CONFIG_DIR} ]; then mkdir -p ${CONFIG_DIR}; chmod 0755 ${CONFIG_DIR}; fi
\tif command -v deb-systemd-helper >/dev/null 2>&1; then
\t\tdeb-systemd-helper unmask mesh-host.service >/dev/null || true
\t\tif deb-systemd-helper --quiet was-enabled mesh-host.service; then
\t\t\tdeb-systemd-helper enable mesh-host.service >/dev/null || true
\t\telse
\t\t\tdeb-systemd-helper update-state mesh-host.service >/dev/null || true
\t\t\tdeb-systemd-helper enable mesh-host.service >/dev/null || true
\t\tfi
\tfi
\tif [ -x ${INIT_SCRIPT} ] && command -v rc-update >/dev/null 2>&1 && [ ! -d /run/systemd/system ]; then
\t\trc-update add mesh-host default >/dev/null 2>&1 || true
\tfi
\tif [ ! -f ${DEFAULT_CONFIG} ]; then
\t\techo "mesh-host: not enrolled yet: run 'mesh-host genesis BUNDLE --mode adopted|converged', then start the service" >&2
\telse
\t\tif [ -n "$2" ]; then action=restart; else action=start; fi
\t\tif [ -d /run/systemd/system ]; then
\t\t\tsystemctl --system daemon-reload >/dev/null || true
\t\t\tdeb-systemd-invoke $action mesh-host.service >/dev/null || true
\t\telse
\t\t\tinvoke-rc.d mesh-host $action || true
\t\tfi
\tfi
fi
exit 0
`;

const prerm = `#!/bin/sh
# mesh-host's prerm: the service stopped before its files go or are replaced (policy-rc.d is asked).
set -e
if [ "$1" = remove ] || [ "$1" = upgrade ] || [ "$1" = deconfigure ]; then
\tif [ -d /run/systemd/system ]; then
\t\tdeb-systemd-invoke stop mesh-host.service >/dev/null || true
\telif [ -x ${INIT_SCRIPT} ]; then
\t\tinvoke-rc.d mesh-host stop || true
\tfi
fi
exit 0
`;

const postrm = `#!/bin/sh
# mesh-host's postrm: remove keeps the host's state (its key, store and outbox) and configuration;
# purge removes what mesh-host itself writes (${DEFAULT_STATE_DIR}, ${DEFAULT_CONFIG}) and
# ${CONFIG_DIR} only when empty: a file a declaration put there is not the package's.
set -e
if [ -d /run/systemd/system ]; then systemctl --system daemon-reload >/dev/null || true; fi
if [ "$1" = remove ] && command -v deb-systemd-helper >/dev/null 2>&1; then
\tdeb-systemd-helper mask mesh-host.service >/dev/null || true
fi
if [ "$1" = purge ]; then
\tif command -v deb-systemd-helper >/dev/null 2>&1; then
\t\tdeb-systemd-helper purge mesh-host.service >/dev/null || true
\t\tdeb-systemd-helper unmask mesh-host.service >/dev/null || true
\tfi
\tif command -v rc-update >/dev/null 2>&1; then rc-update del mesh-host default >/dev/null 2>&1 || true; fi
\trm -rf ${DEFAULT_STATE_DIR}
\trm -f ${DEFAULT_CONFIG}
\trmdir --ignore-fail-on-non-empty ${CONFIG_DIR} 2>/dev/null || true
fi
exit 0
`;

/**
 * What lintian takes for errors and is not: Node links its own zlib into the executable (a single
 * executable carries all of Node), and the OpenRC script is run by openrc-run, which gives every
 * service stop, restart and force-reload without the script spelling them out as an LSB script would.
 */
const LINTIAN_OVERRIDES = `# Node's single executable carries Node's own zlib.
mesh-host: embedded-library zlib [usr/bin/mesh-host]
# An OpenRC script: openrc-run implements stop, restart and force-reload for it.
mesh-host: init.d-script-does-not-implement-required-option force-reload [etc/init.d/mesh-host]
mesh-host: init.d-script-does-not-implement-required-option restart [etc/init.d/mesh-host]
mesh-host: init.d-script-does-not-implement-required-option stop [etc/init.d/mesh-host]
mesh-host: init.d-script-does-not-source-init-functions [etc/init.d/mesh-host]
mesh-host: init.d-script-missing-lsb-section [etc/init.d/mesh-host]
mesh-host: unusual-interpreter /sbin/openrc-run [etc/init.d/mesh-host]
`;

const copyright = `Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: mesh-host

Files: *
Copyright: 2025-2026 mesh-host authors
License: MIT

License: MIT
 Permission is hereby granted, free of charge, to any person obtaining a copy of this software and
 associated documentation files (the "Software"), to deal in the Software without restriction,
 including without limitation the rights to use, copy, modify, merge, publish, distribute, sublicense,
 and/or sell copies of the Software, and to permit persons to whom the Software is furnished to do so,
 subject to the following conditions:
 .
 The above copyright notice and this permission notice shall be included in all copies or substantial
 portions of the Software.
 .
 THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR IMPLIED, INCLUDING BUT NOT
 LIMITED TO THE WARRANTIES OF MERCHANTABILITY, FITNESS FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT. IN
 NO EVENT SHALL THE AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM, DAMAGES OR OTHER LIABILITY,
 WHETHER IN AN ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING FROM, OUT OF OR IN CONNECTION WITH THE
 SOFTWARE OR THE USE OR OTHER DEALINGS IN THE SOFTWARE.
`;

function changelog(version, info, time) {
  const date = new Date(time * 1000).toUTCString().replace('GMT', '+0000');
  return `mesh-host (${version}) unstable; urgency=medium\n\n  * Release ${info.version}, commit ${info.commit}.\n\n -- ${MAINTAINER}  ${date}\n`;
}

function control(version, arch, installedKb) {
  return `Package: mesh-host
Version: ${version}
Architecture: ${arch}
Maintainer: ${MAINTAINER}
Installed-Size: ${installedKb}
Depends: libc6 (>= 2.28), libgcc-s1, libstdc++6
Section: admin
Priority: optional
Homepage: https://github.com/mesh-host/mesh-host
Description: node host for a self-hosted mesh of Linux machines
 mesh-host converges this machine to the signed, versioned declaration the
 control plane sends it over NATS (files, directories, archives, services,
 containers), verifies the result, keeps a crash-safe record and reports back
 in order. meshctl, the control side, is the same executable run by that name.
 .
 The host is enrolled by 'mesh-host genesis BUNDLE'; the service starts once
 it is.
`;
}

/** Every file under DIR, relative, in name order. */
function filesUnder(dir, at = dir) {
  return readdirSync(at, { withFileTypes: true })
    .sort((a, b) => (a.name < b.name ? -1 : 1))
    .flatMap((e) => (e.isDirectory() ? filesUnder(dir, join(at, e.name)) : [relative(dir, join(at, e.name))]));
}

/**
 * The package of the executable at `executable` (a release of `info.version`) for Debian's `arch`, written
 * into `out`; returns its path. `compression` and `level`: dpkg-deb's (xz for a release; gzip -1 where a test wants speed).
 */
export async function debPackage({ executable, info, arch, out, compression = 'xz', level }) {
  const version = debianVersion(info.version);
  const time = commitTime();
  const tree = join(out, `.deb-${arch}`);
  rmSync(tree, { recursive: true, force: true });
  const at = (path) => join(tree, path);
  const place = (path, text, mode = 0o644) => {
    mkdirSync(join(at(path), '..'), { recursive: true });
    writeFileSync(at(path), text);
    chmodSync(at(path), mode);
  };
  mkdirSync(at('usr/bin'), { recursive: true });
  copyFileSync(executable, at('usr/bin/mesh-host'));
  chmodSync(at('usr/bin/mesh-host'), 0o755);
  symlinkSync('mesh-host', at('usr/bin/meshctl'));
  const layout = { executable: '/usr/bin/mesh-host', launchArgs: [], origin: 'package' };
  place(UNIT, systemdUnit(layout));
  place(INIT_SCRIPT, openrcScript(layout), 0o755);
  const man = join(tree, '.man');
  await writeManPages(man, info);
  for (const page of ['mesh-host.1', 'meshctl.1']) place(`usr/share/man/man1/${page}.gz`, gzipSync(readFileSync(join(man, page)), { level: 9 }));
  rmSync(man, { recursive: true });
  place('usr/share/doc/mesh-host/copyright', copyright);
  place('usr/share/lintian/overrides/mesh-host', LINTIAN_OVERRIDES);
  place('usr/share/doc/mesh-host/changelog.gz', gzipSync(changelog(version, info, time), { level: 9 }));

  const payload = filesUnder(tree);
  const installedKb = Math.ceil(payload.reduce((sum, f) => sum + lstatSync(at(f)).size, 0) / 1024);
  const md5 = payload.filter((f) => !f.startsWith('etc/') && f !== 'usr/bin/meshctl').map((f) => `${createHash('md5').update(readFileSync(at(f))).digest('hex')}  ${f}\n`).join('');
  place('DEBIAN/control', control(version, arch, installedKb));
  place('DEBIAN/conffiles', `${INIT_SCRIPT}\n`);
  place('DEBIAN/md5sums', md5);
  place('DEBIAN/postinst', postinst, 0o755);
  place('DEBIAN/prerm', prerm, 0o755);
  place('DEBIAN/postrm', postrm, 0o755);
  // Reproducible: every file's time is the commit's, owners root (dpkg-deb --root-owner-group).
  execFileSync('find', [tree, '-exec', 'touch', '--no-dereference', '--date', `@${time}`, '{}', '+']);
  const deb = join(out, `mesh-host_${version}_${arch}.deb`);
  execFileSync('dpkg-deb', ['--root-owner-group', `-Z${compression}`, ...(level === undefined ? [] : [`-z${level}`]), '--build', tree, deb], { stdio: ['ignore', 'ignore', 'inherit'], env: { ...process.env, SOURCE_DATE_EPOCH: String(time) } });
  rmSync(tree, { recursive: true, force: true });
  return deb;
}


// `node scripts/deb.mjs --executable FILE --version V --out DIR [--arch amd64|arm64] [--compression xz|gzip] [--level N]`:
// the package of an executable made by the release script (the tests package theirs so).
if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const { parseArgs } = await import('node:util');
  const { buildInfo } = await import('./build-info.mjs');
  const { values } = parseArgs({ options: { executable: { type: 'string' }, version: { type: 'string' }, out: { type: 'string' }, arch: { type: 'string' }, compression: { type: 'string' }, level: { type: 'string' } }, strict: true });
  if (!values.executable || !values.out) throw new Error('--executable FILE and --out DIR are needed');
  mkdirSync(values.out, { recursive: true });
  const deb = await debPackage({ executable: values.executable, info: buildInfo(values.version), arch: values.arch ?? DEBIAN_ARCH[process.arch], out: values.out, ...(values.compression ? { compression: values.compression } : {}), ...(values.level ? { level: Number(values.level) } : {}) });
  process.stdout.write(`${deb}\n`);
}
