// Makes an image archive as `docker save` does (manifest.json, the image's config, one layer), offline,
// from busybox-static's one binary and a link for each of its applets: an image for try.sh that needs
// neither a registry nor an engine to build, and the container tests' images (a label makes each its own).
// Usage: node scripts/busybox-image.mjs OUT.tar [REPO:TAG] [LABEL=VALUE] [HEALTHCHECK]
// HEALTHCHECK is the image config's Healthcheck as JSON, as a Dockerfile's HEALTHCHECK makes it
// ({"Test":["CMD-SHELL","..."],"Interval":NS,"StartPeriod":NS,"Retries":N}, durations in nanoseconds).
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const [out, tag = 'localhost/busybox:try', label, healthcheck] = process.argv.slice(2);
if (!out) throw new Error('usage: node scripts/busybox-image.mjs OUT.tar [REPO:TAG] [LABEL=VALUE] [HEALTHCHECK]');
const labels = label ? Object.fromEntries([label.split(/=(.*)/s).slice(0, 2)]) : undefined;
const work = mkdtempSync('/tmp/mesh-busybox-image-');
try {
  const root = join(work, 'root');
  mkdirSync(join(root, 'bin'), { recursive: true });
  mkdirSync(join(root, 'tmp'));
  copyFileSync('/bin/busybox', join(root, 'bin/busybox'));
  for (const applet of execFileSync('/bin/busybox', ['--list'], { encoding: 'utf8' }).split('\n')) {
    if (applet && applet !== 'busybox') symlinkSync('busybox', join(root, 'bin', applet));
  }
  const image = join(work, 'image');
  mkdirSync(join(image, 'layer'), { recursive: true });
  // Owned by root, with a fixed time: the same binary gives the same layer, and the same archive.
  execFileSync('tar', ['--owner=0', '--group=0', '--numeric-owner', '--mtime=@0', '--sort=name', '-C', root, '-cf', join(image, 'layer/layer.tar'), '.']);
  const layer = createHash('sha256').update(readFileSync(join(image, 'layer/layer.tar'))).digest('hex');
  const config = JSON.stringify({
    architecture: 'amd64',
    os: 'linux',
    created: '1970-01-01T00:00:00Z',
    config: { Cmd: ['/bin/sh'], Env: ['PATH=/bin'], ...(labels ? { Labels: labels } : {}), ...(healthcheck ? { Healthcheck: JSON.parse(healthcheck) } : {}) },
    rootfs: { type: 'layers', diff_ids: [`sha256:${layer}`] },
  });
  const configName = `${createHash('sha256').update(config).digest('hex')}.json`;
  writeFileSync(join(image, configName), config);
  writeFileSync(join(image, 'manifest.json'), JSON.stringify([{ Config: configName, RepoTags: [tag], Layers: ['layer/layer.tar'] }]));
  execFileSync('tar', ['--owner=0', '--group=0', '--numeric-owner', '--mtime=@0', '--sort=name', '-C', image, '-cf', out, 'manifest.json', configName, 'layer']);
} finally {
  rmSync(work, { recursive: true, force: true });
}
