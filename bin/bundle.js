// Runs a program from its bundle (dist/bin/NAME.cjs, made by scripts/build.mjs): one CommonJS script
// compiled with V8's code cache made at build time (NAME.cjs.cache), so a start neither resolves nor
// parses module by module. A cache this node cannot use (another version, other V8 flags) is ignored
// by V8 and the script is compiled as it stands: slower, never different.
//
// bin/ is CommonJS (its package.json): Node's ES module loader, which an ES entry point and this file
// would go through, cost a one-shot command 15 to 20 ms before its first line ran.
'use strict';
const { readFileSync } = require('node:fs');
const { createRequire } = require('node:module');
const { dirname, join } = require('node:path');
const { Script } = require('node:vm');

/** The bundle of a program, beside this file's dist/bin. */
function bundlePath(program) {
  return join(__dirname, '..', 'dist', 'bin', `${program}.cjs`);
}

/**
 * The bundle compiled as Node compiles a CommonJS module (the same wrapper, on the first line so that
 * line numbers stay true). The build makes the cache from this very Script, so the two must not differ.
 */
function compileBundle(file, cachedData) {
  const source = readFileSync(file, 'utf8');
  return new Script(`(function (exports, require, module, __filename, __dirname) {${source}\n})`, {
    filename: file,
    ...(cachedData ? { cachedData } : {}),
  });
}

/** A bundle compiled and evaluated as a CommonJS module (its requires resolved beside it): the script, and its exports. */
function loadBundle(file, cachedData) {
  const script = compileBundle(file, cachedData);
  const module = { exports: {} };
  script.runInThisContext()(module.exports, createRequire(file), module, file, dirname(file));
  return { script, exports: module.exports };
}

function readCache(file) {
  try {
    return readFileSync(`${file}.cache`);
  } catch {
    return undefined;
  }
}

/**
 * Loads the program's bundle, runs its main with this process's arguments, and ends the process with
 * main's status once main has finished and its output is out. Every command awaits its own work (a
 * NATS connection closed, a child waited for); what a natural end would add is Node tearing its heap
 * down and joining its threads, 20 to 30 ms of a one-shot command on a loaded machine. Output a pipe
 * has not taken yet (past its 64 KiB, a large --json) is left to the natural end, which writes it all.
 */
function runBundle(program) {
  const file = bundlePath(program);
  return loadBundle(file, readCache(file)).exports.main(process.argv.slice(2)).then((code) => {
    if (process.stdout.writableLength === 0 && process.stderr.writableLength === 0) process.exit(code);
  });
}

exports.bundlePath = bundlePath;
exports.compileBundle = compileBundle;
exports.loadBundle = loadBundle;
exports.runBundle = runBundle;
