// Certificates made in the test by Debian's openssl: a CA of the test's own, and server
// certificates it signs, so that clients verify them as they would a real one (no
// rejectUnauthorized: false anywhere).
import { execFile } from 'node:child_process'
import { createHash, X509Certificate } from 'node:crypto'
import { readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { promisify } from 'node:util'

const run = promisify(execFile)

export interface TestCa {
  dir: string
  /** The CA certificate (PEM), for a client's `ca`. */
  pem: string
  /**
   * A certificate for `names` (DNS names; IP literals as IP entries), signed by this CA; `san: false`
   * names only the first, as its common name; `key` another key type (e.g. `rsa:512`).
   */
  issue: (name: string, names: string[], options?: { san?: boolean, key?: string }) => Promise<ServerCert>
  /** The same, signed by an intermediate CA; the cert file holds the chain (leaf, then intermediate). */
  issueChained: (name: string, names: string[]) => Promise<ServerCert>
}

export interface ServerCert {
  cert: string
  key: string
  /** The PEM texts. */
  certPem: string
  keyPem: string
  /** base64 SHA-256 of the public key (SPKI), as Chromium's --ignore-certificate-errors-spki-list takes it. */
  spki: string
}

function san (names: string[]): string {
  return names.map((name) => /^[\d.]+$/.test(name) || name.includes(':') ? `IP:${name}` : `DNS:${name}`).join(',')
}

/** A CA in `dir` (a P-256 key, valid a day). */
export async function testCa (dir: string): Promise<TestCa> {
  const caKey = join(dir, 'ca.key')
  const caCert = join(dir, 'ca.pem')
  await run('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', caKey, '-out', caCert, '-days', '1', '-subj', '/CN=macgate test CA'])
  const pem = await readFile(caCert, 'utf8')
  let serial = 1
  const issue = async (name: string, names: string[], { san: withSan = true, key: keyType = 'ec' }: { san?: boolean, key?: string } = {}): Promise<ServerCert> => {
    const key = join(dir, `${name}.key`)
    const csr = join(dir, `${name}.csr`)
    const cert = join(dir, `${name}.pem`)
    const extensions = join(dir, `${name}.ext`)
    await writeFile(extensions, `${withSan ? `subjectAltName=${san(names)}\n` : ''}extendedKeyUsage=serverAuth\n`)
    const keyOptions = keyType === 'ec' ? ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256'] : ['-newkey', keyType]
    await run('openssl', ['req', ...keyOptions, '-nodes', '-keyout', key, '-out', csr, '-subj', `/CN=${names[0]}`])
    await run('openssl', ['x509', '-req', '-in', csr, '-CA', caCert, '-CAkey', caKey, '-set_serial', String(serial++), '-out', cert, '-days', '1', '-extfile', extensions])
    const [certPem, keyPem] = await Promise.all([readFile(cert, 'utf8'), readFile(key, 'utf8')])
    const spki = createHash('sha256').update(new X509Certificate(certPem).publicKey.export({ type: 'spki', format: 'der' })).digest('base64')
    return { cert, key, certPem, keyPem, spki }
  }
  /** A certificate signed by an intermediate CA (made here, signed by this one): its file holds the leaf, then the intermediate. */
  const issueChained = async (name: string, names: string[]): Promise<ServerCert> => {
    const interKey = join(dir, `${name}-inter.key`)
    const interCsr = join(dir, `${name}-inter.csr`)
    const interCert = join(dir, `${name}-inter.pem`)
    const interExt = join(dir, `${name}-inter.ext`)
    await writeFile(interExt, 'basicConstraints=critical,CA:TRUE\nkeyUsage=critical,keyCertSign,cRLSign\n')
    await run('openssl', ['req', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', interKey, '-out', interCsr, '-subj', `/CN=${name} intermediate`])
    await run('openssl', ['x509', '-req', '-in', interCsr, '-CA', caCert, '-CAkey', caKey, '-set_serial', String(serial++), '-out', interCert, '-days', '1', '-extfile', interExt])
    const key = join(dir, `${name}.key`)
    const csr = join(dir, `${name}.csr`)
    const leaf = join(dir, `${name}-leaf.pem`)
    const cert = join(dir, `${name}.pem`)
    const extensions = join(dir, `${name}.ext`)
    await writeFile(extensions, `subjectAltName=${san(names)}\nextendedKeyUsage=serverAuth\n`)
    await run('openssl', ['req', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', key, '-out', csr, '-subj', `/CN=${names[0]}`])
    await run('openssl', ['x509', '-req', '-in', csr, '-CA', interCert, '-CAkey', interKey, '-set_serial', String(serial++), '-out', leaf, '-days', '1', '-extfile', extensions])
    const [leafPem, interPem, keyPem] = await Promise.all([readFile(leaf, 'utf8'), readFile(interCert, 'utf8'), readFile(key, 'utf8')])
    await writeFile(cert, leafPem + interPem)
    const spki = createHash('sha256').update(new X509Certificate(leafPem).publicKey.export({ type: 'spki', format: 'der' })).digest('base64')
    return { cert, key, certPem: leafPem, keyPem, spki }
  }
  return { dir, pem, issue, issueChained }
}

/** The serial number of the certificate a TLS peer presented, to tell two certificates apart. */
export function serialOf (pem: string): string {
  return new X509Certificate(pem).serialNumber
}
