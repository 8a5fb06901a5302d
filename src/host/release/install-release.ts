import { createHash } from 'node:crypto';
import { accessSync, constants, createReadStream, lstatSync, readFileSync, readlinkSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { chmod, symlink } from 'node:fs/promises';
import { copy, ensureDir, move, outputFile, remove } from 'fs-extra/esm';
import type { ServiceManager } from '../../machine/services/manager.js';
import { isRunning } from '../../machine/services/manager.js';
import { EXIT, HostError } from '../../core/system/errors.js';
import { DEFAULT_CONFIG, DEFAULT_STATE_DIR } from '../../core/system/default-paths.js';
import { CURRENT, EXECUTABLE, RELEASES_DIR, moveCurrent } from './layout.js';
import { openrcScript, systemdUnit, type UnitLayout } from './release-units.js';
import { SIGNATURE_FILE, SUMS_FILE } from '../../core/declaration/release-sums.js';

/**
 * `mesh-host install` and `uninstall` as steps: each says what it would do and whether it is needed,
 * so a dry run prints the same steps the install takes and a second install finds none needed.
 */
export interface InstallStep {
  /** What it does, in a few words: `copy the release`, `write the unit`. */
  action: string;
  target: string;
  /** Needed: the machine is not yet as this step makes it. */
  needed: boolean;
  /** Why it is or is not needed, when that is worth saying. */
  detail?: string;
  /** It writes the service definition: once written, the service manager reads its definitions again. */
  definition?: true;
  run(): Promise<void>;
}

export interface InstallTarget {
  /** The tree installed into ('/' on a real machine). */
  root: string;
  /** The state directory and configuration as the running system names them. */
  stateDir: string;
  configPath: string;
  version: string;
  /** The executable to install (the running single executable). */
  source: string;
  manager: ServiceManager | undefined;
}

export const SERVICE = 'mesh-host';
export const COMMAND_LINK = '/usr/local/bin/mesh-host';
export const CTL_LINK = '/usr/local/bin/meshctl';

const inRoot = (root: string, path: string) => join(root, path);

export function unitLayout(target: Pick<InstallTarget, 'stateDir' | 'configPath'>): UnitLayout {
  const launchArgs = [
    ...(target.stateDir === DEFAULT_STATE_DIR ? [] : ['--state-dir', target.stateDir]),
    ...(target.configPath === DEFAULT_CONFIG ? [] : ['--config', target.configPath]),
  ];
  return { executable: join(RELEASES_DIR, CURRENT, EXECUTABLE), launchArgs };
}

/** Where the service definition goes, and its text, for the service manager found. */
export function serviceDefinition(target: InstallTarget): { path: string; text: string; mode: number } | undefined {
  if (!target.manager) return undefined;
  const layout = unitLayout(target);
  return target.manager.name === 'systemd'
    ? { path: `/etc/systemd/system/${SERVICE}.service`, text: systemdUnit(layout), mode: 0o644 }
    : { path: `/etc/init.d/${SERVICE}`, text: openrcScript(layout), mode: 0o755 };
}

async function sha256Of(path: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(path)) hash.update(chunk as Buffer);
  return hash.digest('hex');
}

function modeOf(path: string): number | undefined {
  try {
    return statSync(path).mode & 0o7777;
  } catch {
    return undefined;
  }
}

function linkOf(path: string): string | undefined {
  try {
    return lstatSync(path).isSymbolicLink() ? readlinkSync(path) : undefined;
  } catch {
    return undefined;
  }
}

/** Whether a directory (or the nearest one above it that exists) is on a writable file system. */
function writable(dir: string): boolean {
  for (let at = dir; ; at = dirname(at)) {
    try {
      accessSync(at, constants.W_OK);
      return true;
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code !== 'ENOENT' || at === dirname(at)) return code !== 'EROFS';
    }
  }
}

function textOf(path: string): string | undefined {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return undefined;
  }
}

/** The release's executable copied under releases/VERSION/, with the signed sums beside it when it has them. */
async function releaseSteps(target: InstallTarget, releasesDir: string): Promise<InstallStep[]> {
  const { version } = target;
  const steps: InstallStep[] = [];
  const executable = join(releasesDir, version, EXECUTABLE);
  const installed = modeOf(executable) === undefined ? undefined : await sha256Of(executable);
  const wanted = await sha256Of(target.source);
  steps.push({
    action: `copy release ${version}`,
    target: executable,
    needed: installed !== wanted,
    ...(installed !== undefined && installed !== wanted ? { detail: 'another build of the same version is there: replaced' } : {}),
    run: async () => {
      // Copied beside it and renamed over it: a host running the old file keeps running it.
      const temporary = `${executable}.${process.pid}.tmp`;
      await ensureDir(releasesDir, { mode: 0o700 });
      await copy(target.source, temporary, { dereference: true });
      await chmod(temporary, 0o755);
      await move(temporary, executable, { overwrite: true });
    },
  });
  // The signed sums go with the release, so that it can be checked again where it is (a trial back to it).
  for (const name of [SUMS_FILE, SIGNATURE_FILE]) {
    const from = join(dirname(target.source), name);
    const text = textOf(from);
    if (text === undefined) continue;
    const to = join(releasesDir, version, name);
    steps.push({ action: `copy ${name}`, target: to, needed: textOf(to) !== text, run: () => outputFile(to, text, { mode: 0o644 }) });
  }
  return steps;
}

/** The command links: mesh-host, and meshctl (the same executable run by that name). */
function commandLinkSteps(root: string): InstallStep[] {
  const steps: InstallStep[] = [];
  const commandTarget = join(RELEASES_DIR, CURRENT, EXECUTABLE);
  for (const [link, action] of [[COMMAND_LINK, 'link the command'], [CTL_LINK, 'link meshctl']] as const) {
    const command = inRoot(root, link);
    // A read-only /usr (an image-based system) keeps no link; the release runs from its own path all the same.
    const linkable = writable(dirname(command));
    // A meshctl installed otherwise (a control machine's) is kept.
    const other = link === CTL_LINK && linkOf(command) !== commandTarget && (modeOf(command) !== undefined || linkOf(command) !== undefined);
    steps.push({
      action,
      target: command,
      needed: linkable && !other && linkOf(command) !== commandTarget,
      ...(linkable ? (other ? { detail: 'another meshctl is there: kept' } : {}) : { detail: `read-only: not linked; the command is ${commandTarget}` }),
      run: async () => {
        // A link into the installed tree: it names the running system's path, which need not exist here yet.
        await remove(command);
        await ensureDir(dirname(command));
        await symlink(commandTarget, command);
      },
    });
  }
  return steps;
}

/** The files of an install: state and configuration directories, the release, `current`, the command, the service. */
export async function installFileSteps(target: InstallTarget): Promise<InstallStep[]> {
  const { root, version } = target;
  const steps: InstallStep[] = [];
  const stateDir = inRoot(root, target.stateDir);
  const stateMode = modeOf(stateDir);
  steps.push({
    action: 'make the state directory (0700)',
    target: stateDir,
    needed: stateMode !== 0o700,
    ...(stateMode !== undefined && stateMode !== 0o700 ? { detail: `its mode is ${stateMode.toString(8)}` } : {}),
    run: async () => {
      // Its parents are ordinary system directories; only the state directory itself is closed.
      await ensureDir(dirname(stateDir), { mode: 0o755 });
      await ensureDir(stateDir, { mode: 0o700 });
      await chmod(stateDir, 0o700);
    },
  });
  const configDir = inRoot(root, dirname(target.configPath));
  steps.push({ action: 'make the configuration directory', target: configDir, needed: modeOf(configDir) === undefined, run: () => ensureDir(configDir, { mode: 0o755 }) });

  const releasesDir = inRoot(root, RELEASES_DIR);
  steps.push(...(await releaseSteps(target, releasesDir)));
  const current = linkOf(join(releasesDir, CURRENT));
  steps.push({
    action: `link ${CURRENT} to ${version}`,
    target: join(releasesDir, CURRENT),
    needed: current !== version,
    ...(current !== undefined && current !== version ? { detail: `it named ${current}` } : {}),
    run: async () => moveCurrent({ releasesDir, releaseFile: '' }, version),
  });
  steps.push(...commandLinkSteps(root));
  const definition = serviceDefinition(target);
  if (definition) {
    const path = inRoot(root, definition.path);
    steps.push({
      action: `write the ${target.manager!.name === 'systemd' ? 'systemd unit' : 'OpenRC script'}`,
      target: path,
      definition: true,
      needed: textOf(path) !== definition.text || modeOf(path) !== definition.mode,
      run: async () => {
        await outputFile(path, definition.text, { mode: definition.mode });
        await chmod(path, definition.mode);
      },
    });
  }
  return steps;
}

/** Enable and start (or restart, when the release or the definition changed) through the service manager. */
export async function serviceSteps(manager: ServiceManager, options: { reload: boolean; restart: boolean }): Promise<InstallStep[]> {
  const unit = manager.name === 'systemd' ? `${SERVICE}.service` : SERVICE;
  const state = options.reload ? undefined : (await manager.query([unit])).get(unit);
  const running = state !== undefined && isRunning(state);
  return [
    ...(options.reload ? [{ action: `reload ${manager.name}'s definitions`, target: unit, needed: true, run: () => manager.daemonReload() }] : []),
    { action: 'enable the service', target: unit, needed: state?.unitFileState !== 'enabled', run: () => manager.setEnabled(unit, true) },
    running && options.restart
      ? { action: 'restart the service', target: unit, needed: true, detail: 'the release or its definition changed', run: () => manager.act(unit, 'restart') }
      : { action: 'start the service', target: unit, needed: !running, run: () => manager.act(unit, 'start') },
  ];
}

/** What uninstall removes: the service (stopped and disabled first), the command, the releases. */
export function uninstallSteps(target: InstallTarget, options: { purge: boolean; serviceKnown: boolean }): InstallStep[] {
  const { root } = target;
  const steps: InstallStep[] = [];
  const manager = target.manager;
  const definition = serviceDefinition(target);
  const unit = manager?.name === 'systemd' ? `${SERVICE}.service` : SERVICE;
  if (manager && options.serviceKnown && root === '/') {
    steps.push({ action: 'stop the service', target: unit, needed: true, run: () => manager.act(unit, 'stop') });
    steps.push({ action: 'disable the service', target: unit, needed: true, run: () => manager.setEnabled(unit, false) });
  }
  const exists = (path: string) => modeOf(path) !== undefined || linkOf(path) !== undefined;
  if (definition) {
    const path = inRoot(root, definition.path);
    steps.push({ action: 'remove the service definition', target: path, needed: exists(path), run: () => remove(path) });
    if (manager && root === '/') steps.push({ action: `reload ${manager.name}'s definitions`, target: unit, needed: exists(path), run: () => manager.daemonReload() });
  }
  const command = inRoot(root, COMMAND_LINK);
  steps.push({ action: 'remove the command link', target: command, needed: linkOf(command) !== undefined, run: () => remove(command) });
  // Only a link to a release: a meshctl of another install is not this one's to remove.
  const ctl = inRoot(root, CTL_LINK);
  steps.push({ action: 'remove the meshctl link', target: ctl, needed: linkOf(ctl) === join(RELEASES_DIR, CURRENT, EXECUTABLE), run: () => remove(ctl) });
  const releases = inRoot(root, RELEASES_DIR);
  steps.push({ action: 'remove the releases', target: releases, needed: exists(releases), run: () => remove(releases) });
  if (options.purge) {
    const stateDir = inRoot(root, target.stateDir);
    const configDir = inRoot(root, dirname(target.configPath));
    steps.push({ action: 'remove the state (--purge)', target: stateDir, needed: exists(stateDir), run: () => remove(stateDir) });
    steps.push({ action: 'remove the configuration (--purge)', target: configDir, needed: exists(configDir), run: () => remove(configDir) });
  }
  return steps;
}

/** Runs the needed steps in order; the first failure stops the rest and is named (exit 1), with what was done before it. */
export async function runSteps(steps: InstallStep[], dryRun: boolean): Promise<void> {
  if (dryRun) return;
  const done: string[] = [];
  for (const step of steps) {
    if (!step.needed) continue;
    try {
      await step.run();
    } catch (err) {
      throw new HostError(EXIT.failed, `${step.action} (${step.target}) failed: ${(err as Error).message}`, done.length ? [`done before it: ${done.join('; ')}`] : ['nothing was done before it']);
    }
    done.push(`${step.action} (${step.target})`);
  }
}
