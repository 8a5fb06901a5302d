import { access, constants, statfs } from 'node:fs/promises';
import { faultOf, type Fault } from '../../core/system/errors.js';

/**
 * Whether the state directory can be written, as the heartbeat says it, asked without writing there (a
 * probe that wrote would change the directory at every beat, and a plan or a quiet host must change
 * nothing): the system's own answer to "may this directory be written" (EROFS on a read-only disk) and
 * the blocks its file system has left (none: ENOSPC, the disk is full). A disk that fails (EIO) is said
 * by the apply whose write it fails. The fault is what the fleet shows until a probe finds room again.
 * Each probe runs off the event loop; the heartbeat reads the last one's result.
 */
export class StateDirProbe {
  private seen: Fault | null = null;
  private running: Promise<void> | undefined;

  constructor(
    private readonly stateDir: string,
    /** Told when the answer changed (a beat now, so that the fleet sees it before the next one). */
    private readonly changed: () => void,
  ) {}

  /** The last probe's fault, or null when the state directory could be written. */
  get fault(): Fault | null {
    return this.seen;
  }

  /** Probes once (one at a time; a call while one runs waits for it). */
  probe(): Promise<void> {
    this.running ??= this.writeOnce().finally(() => (this.running = undefined));
    return this.running;
  }

  private async writeOnce(): Promise<void> {
    let fault: Fault | null = null;
    try {
      await access(this.stateDir, constants.W_OK);
      const room = await statfs(this.stateDir);
      if (room.bavail === 0) fault = { code: 'ENOSPC', path: this.stateDir };
    } catch (err) {
      fault = { ...(faultOf(err) ?? { code: 'EUNKNOWN' }), path: this.stateDir };
    }
    const was = this.seen;
    this.seen = fault;
    if (was?.code !== fault?.code) this.changed();
  }
}
