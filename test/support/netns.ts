import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { connect, createServer, type Server } from 'node:net';
import { join } from 'node:path';

/** A documentation address (RFC 5737): not loopback, routed nowhere. */
export const OFF_LOOPBACK_ADDRESS = '192.0.2.1';

/** Forwards every connection made to one address to another, both given as node:net connect options. */
const FORWARDER = `
const net = require('node:net');
const [from, to] = process.argv.slice(1).map((a) => JSON.parse(a));
net.createServer((inbound) => {
  const outbound = net.connect(to);
  inbound.pipe(outbound).pipe(inbound);
  inbound.on('error', () => outbound.destroy());
  outbound.on('error', () => inbound.destroy());
}).listen(from, () => console.log('forwarding'));
`;

function must(args: string[]): void {
  const r = spawnSync('ip', args, { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`ip ${args.join(' ')}: ${r.stderr || r.error?.message}`);
}

/**
 * A network namespace of the test's own, with loopback and a veth pair inside it, one end holding
 * 192.0.2.1: a server listening there is off loopback, yet nothing reaches this machine's network. A
 * loopback port of this machine (a nats-server) is carried in through a Unix socket, which a network
 * namespace does not separate.
 */
export class TestNetns {
  private readonly children: ChildProcess[] = [];
  private readonly servers: Server[] = [];

  private constructor(readonly name: string, private readonly dir: string) {}

  /** Makes the namespace; `dir` is a scratch folder for its sockets. */
  static make(name: string, dir: string): TestNetns {
    must(['netns', 'add', name]);
    const ns = new TestNetns(name, dir);
    try {
      // No IPv6 in it: the links' IPv6 addresses would finish their duplicate-address detection a moment
      // after they come up, and a browser started meanwhile takes that change of addresses for a new
      // network and fails the page it was loading (net::ERR_NETWORK_CHANGED).
      ns.inside(['sh', '-c', 'echo 1 > /proc/sys/net/ipv6/conf/default/disable_ipv6 && echo 1 > /proc/sys/net/ipv6/conf/all/disable_ipv6']);
      must(['-n', name, 'link', 'set', 'lo', 'up']);
      must(['-n', name, 'link', 'add', 'page0', 'type', 'veth', 'peer', 'name', 'page1']);
      must(['-n', name, 'addr', 'add', `${OFF_LOOPBACK_ADDRESS}/24`, 'dev', 'page0']);
      must(['-n', name, 'link', 'set', 'page0', 'up']);
      must(['-n', name, 'link', 'set', 'page1', 'up']);
      ns.untilLinksUp(['page0', 'page1']);
    } catch (err) {
      ns.delete();
      throw err;
    }
    return ns;
  }

  /** Runs a command inside the namespace, throwing with its words when it fails. */
  private inside(command: string[]): void {
    const [program, ...args] = this.exec(command);
    const r = spawnSync(program!, args, { encoding: 'utf8' });
    if (r.status !== 0) throw new Error(`${command.join(' ')} in ${this.name}: ${r.stderr || r.error?.message}`);
  }

  /** Waits until the links' carrier is up (a veth's comes up a moment after it is set up): no change of them follows. */
  private untilLinksUp(links: string[]): void {
    const deadline = Date.now() + 10_000;
    for (;;) {
      const r = spawnSync('ip', ['-n', this.name, '-o', 'link', 'show', 'up'], { encoding: 'utf8' });
      const up = links.filter((link) => new RegExp(`: ${link}@\\S+: <[^>]*\\bLOWER_UP\\b`).test(r.stdout));
      if (up.length === links.length) return;
      if (Date.now() > deadline) throw new Error(`the links ${links.join(', ')} of ${this.name} did not come up:\n${r.stdout}`);
      spawnSync('sleep', ['0.05']);
    }
  }

  /** The command line that runs `command` inside the namespace. */
  exec(command: string[]): string[] {
    return ['ip', 'netns', 'exec', this.name, ...command];
  }

  /** Makes this machine's 127.0.0.1:`port` answer on the namespace's 127.0.0.1:`port` too. */
  async carry(port: number): Promise<void> {
    const socket = join(this.dir, `carry-${port}.sock`);
    const server = createServer((inbound) => {
      const outbound = connect({ host: '127.0.0.1', port });
      inbound.pipe(outbound).pipe(inbound);
      inbound.on('error', () => outbound.destroy());
      outbound.on('error', () => inbound.destroy());
    });
    this.servers.push(server);
    await new Promise<void>((resolve, reject) => server.once('error', reject).listen(socket, resolve));
    const [command, ...args] = this.exec([process.execPath, '-e', FORWARDER, JSON.stringify({ host: '127.0.0.1', port }), JSON.stringify({ path: socket })]);
    const child = spawn(command!, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    this.children.push(child);
    let said = '';
    await new Promise<void>((resolve, reject) => {
      child.stdout!.on('data', (d: Buffer) => (said += d.toString()).includes('forwarding') && resolve());
      child.stderr!.on('data', (d: Buffer) => (said += d.toString()));
      child.once('exit', (code) => reject(new Error(`the forwarder in ${this.name} exited ${code}: ${said}`)));
    });
  }

  /** Ends what it started (by its own handles) and deletes the namespace. */
  delete(): void {
    for (const child of this.children) child.kill('SIGKILL');
    for (const server of this.servers) server.close();
    spawnSync('ip', ['netns', 'delete', this.name]);
  }
}
