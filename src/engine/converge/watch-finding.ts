/** What a watcher saw between applies: said in the report of the reconcile it asked for. */
export interface Finding {
  kind: 'unit' | 'drift' | 'container';
  /** The unit, the path as declared, or the container's name. */
  target: string;
  /** One line: `fail2ban.service was failed`, `drift: /etc/x content changed`. */
  message: string;
}

/** A watcher's handle: it only asks for a reconcile (through its callback) and is closed when its apply starts. */
export interface Watcher {
  close(): void;
}
