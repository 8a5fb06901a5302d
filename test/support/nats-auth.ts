import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createAccount, createOperator, createUser } from '@nats-io/nkeys';
import { encodeAccount, encodeOperator, encodeUser, fmtCreds } from '@nats-io/jwt';

/**
 * A nats-server in operator mode, as a fleet runs it: an operator, an account with JetStream, a
 * system account, and a user without limits whose credentials file (JWT and seed) is given to the host
 * or to the control side; the account's seed (`accountKey`) issues narrower ones.
 */
export async function operatorMode(dir: string): Promise<{ conf: string; creds: string; accountKey: string }> {
  const operator = createOperator();
  const account = createAccount();
  const system = createAccount();
  const user = createUser();
  const unlimited = { conn: -1, subs: -1, data: -1, payload: -1, imports: -1, exports: -1, leaf: -1, wildcards: true, mem_storage: -1, disk_storage: -1, streams: -1, consumer: -1 };
  const operatorJwt = await encodeOperator('mesh', operator, { system_account: system.getPublicKey() });
  const accountJwt = await encodeAccount('fleet', account, { limits: unlimited }, { signer: operator });
  const systemJwt = await encodeAccount('SYS', system, {}, { signer: operator });
  const userJwt = await encodeUser('host', user, account);
  const creds = join(dir, 'host.creds');
  writeFileSync(creds, fmtCreds(userJwt, user), { mode: 0o600 });
  const accountKey = join(dir, 'account.nk');
  writeFileSync(accountKey, `${new TextDecoder().decode(account.getSeed())}\n`, { mode: 0o600 });
  const conf = join(dir, 'operator.conf');
  writeFileSync(
    conf,
    [
      `operator: ${operatorJwt}`,
      `system_account: ${system.getPublicKey()}`,
      'resolver: MEMORY',
      'resolver_preload: {',
      `  ${account.getPublicKey()}: ${accountJwt}`,
      `  ${system.getPublicKey()}: ${systemJwt}`,
      '}',
      '',
    ].join('\n'),
  );
  return { conf, creds, accountKey };
}

export interface TlsFiles {
  conf: string;
  ca: string;
  cert: string;
  key: string;
}

/** A CA, a server certificate for 127.0.0.1, and a client certificate the server demands (mutual TLS), made with openssl. */
export function mutualTls(dir: string): TlsFiles {
  const path = (name: string) => join(dir, name);
  const openssl = (...args: string[]) => execFileSync('openssl', args, { stdio: 'pipe' });
  openssl('req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-days', '2', '-subj', '/CN=mesh test CA', '-keyout', path('ca.key'), '-out', path('ca.pem'));
  const issue = (name: string, subject: string, extensions: string) => {
    writeFileSync(path(`${name}.ext`), extensions);
    openssl('req', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-subj', subject, '-keyout', path(`${name}.key`), '-out', path(`${name}.csr`));
    openssl('x509', '-req', '-in', path(`${name}.csr`), '-CA', path('ca.pem'), '-CAkey', path('ca.key'), '-CAcreateserial', '-days', '2', '-extfile', path(`${name}.ext`), '-out', path(`${name}.pem`));
  };
  issue('server', '/CN=127.0.0.1', 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n');
  issue('client', '/CN=mesh-host', 'extendedKeyUsage=clientAuth\n');
  const conf = path('tls.conf');
  writeFileSync(conf, `tls {\n  cert_file: "${path('server.pem')}"\n  key_file: "${path('server.key')}"\n  ca_file: "${path('ca.pem')}"\n  verify: true\n}\n`);
  return { conf, ca: path('ca.pem'), cert: path('client.pem'), key: path('client.key') };
}
