/**
 * Names of entries inside an archive's target. A name is local when it is relative, normal and stays
 * below the target: no empty, '.' or '..' component, no NUL, no component over 255 bytes. Archives
 * made with `tar -C dir .` name their entries './x': that prefix (and a directory's trailing slash)
 * is the only liberty taken; anything else that is not already normal is refused, not repaired.
 */
export function localPathProblem(name: string): string | undefined {
  if (name.length === 0) return 'an empty name';
  if (name.startsWith('/')) return 'an absolute path';
  if (name.includes('\0')) return 'a NUL byte in the name';
  if (name.length > 4000) return 'a name over 4000 characters';
  for (const part of name.split('/')) {
    if (part === '..') return "a '..' component";
    if (part === '' || part === '.') return 'not a normal path';
    if (Buffer.byteLength(part) > 255) return 'a component over 255 bytes';
  }
  return undefined;
}

/** An entry's name as the archive spells it, made local ('./a/' → 'a'), or why it cannot be. '' is the target itself. */
export function entryName(raw: string): { name: string } | { problem: string } {
  let name = raw;
  while (name.startsWith('./')) name = name.slice(2);
  if (name.endsWith('/')) name = name.slice(0, -1);
  if (name === '' || name === '.') return { name: '' };
  const problem = localPathProblem(name);
  return problem ? { problem } : { name };
}

/** The directory holding an entry: '' for the target itself. */
export function parentOf(name: string): string {
  const at = name.lastIndexOf('/');
  return at < 0 ? '' : name.slice(0, at);
}

/** A declared path of an entry under its target. */
export function joinTarget(target: string, name: string): string {
  return name === '' ? target : `${target}/${name}`;
}
