import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { makeMeshAccounts } from '../../src/control/setup/nats-accounts.js';
import { operatorModeLines } from '../../src/control/setup/server-conf.js';

/**
 * A nats-server in operator mode, as `meshctl init` sets one up (the product's own accounts and
 * operator-mode lines): the configuration's operator part (the test's server adds its port and
 * JetStream on the command line), meshctl's credentials without restrictions, and the account's
 * signing key that issues narrower ones, with the account it signs for.
 */
export async function operatorMode(dir: string): Promise<{ conf: string; creds: string; accountKey: string; account: string }> {
  const accounts = await makeMeshAccounts();
  const creds = join(dir, 'host.creds');
  writeFileSync(creds, accounts.controlCreds, { mode: 0o600 });
  const accountKey = join(dir, 'account-signing.nk');
  writeFileSync(accountKey, `${accounts.accountSigning.seed}\n`, { mode: 0o600 });
  const conf = join(dir, 'operator.conf');
  writeFileSync(conf, [...operatorModeLines(accounts, join(dir, 'jwt')), ''].join('\n'));
  return { conf, creds, accountKey, account: accounts.account.publicKey };
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
