// The public listener's certificates: read from their files, chosen by SNI, read again on a renewal.
import { createPrivateKey, X509Certificate } from 'node:crypto'
import { readFile } from 'node:fs/promises'
import { createSecureContext, type SecureContext } from 'node:tls'
import type { TlsFiles } from '../config/edge-settings.ts'

/** TLS 1.2 and 1.3 only: every context, the default one and those SNI picks, says so. */
export const TLS_VERSIONS = { minVersion: 'TLSv1.2', maxVersion: 'TLSv1.3' } as const

/** How each file of a pair is named in an error: the config's field, or the command-line flag. */
export interface TlsLabels {
  cert: string
  key: string
}

/** Labels for pairs from the config file: `config.tls` for one pair, `config.tls[i]` for several. */
export function configLabels (count: number): TlsLabels[] {
  return Array.from({ length: count }, (_, index) => {
    const field = count > 1 ? `config.tls[${index}]` : 'config.tls'
    return { cert: `${field}.cert`, key: `${field}.key` }
  })
}

/** A file that cannot be used, said with its field: the start fails with it, a reload logs it. */
export class TlsFileError extends Error {
  constructor (message: string) {
    super(message)
    this.name = 'TlsFileError'
  }
}

interface LoadedPair {
  files: TlsFiles
  /** The certificate's DNS names, lower case (`*.example.com` for a wildcard). */
  names: string[]
  pem: { cert: string, key: string }
  context: SecureContext
}

async function readPem (path: string, label: string): Promise<string> {
  try {
    return await readFile(path, 'utf8')
  } catch (error) {
    throw new TlsFileError(`${label}: cannot read ${path}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`)
  }
}

/** The names SNI is matched against: the DNS subject alternative names, else the common name. */
function namesOf (certificate: X509Certificate): string[] {
  const alternatives = (certificate.subjectAltName ?? '').split(', ').filter((entry) => entry.startsWith('DNS:')).map((entry) => entry.slice(4).toLowerCase())
  if (alternatives.length > 0) return alternatives
  const common = /^CN=(.+)$/m.exec(certificate.subject)?.[1]
  return common === undefined ? [] : [common.toLowerCase()]
}

/** A name covers a server name exactly, or as a wildcard for one label (RFC 6125 §6.4.3). */
function covers (name: string, servername: string): boolean {
  if (name === servername) return true
  if (!name.startsWith('*.')) return false
  const dot = servername.indexOf('.')
  return dot > 0 && servername.slice(dot + 1) === name.slice(2)
}

/**
 * Reads one pair and checks it, in order: both files readable, the certificate and the key each
 * PEM, the key the certificate's own, then a secure context made of them (what OpenSSL itself
 * refuses: a key too weak for its security level, say). Each failure names its file's field.
 */
async function loadPair (files: TlsFiles, labels: TlsLabels): Promise<LoadedPair> {
  // One after the other: with both unreadable, the certificate is the one named, every time (read
  // together, the first of the two failures to arrive was).
  const cert = await readPem(files.cert, labels.cert)
  const key = await readPem(files.key, labels.key)
  let certificate: X509Certificate
  try {
    certificate = new X509Certificate(cert)
  } catch {
    throw new TlsFileError(`${labels.cert}: ${files.cert} holds no PEM certificate`)
  }
  let privateKey: ReturnType<typeof createPrivateKey>
  try {
    privateKey = createPrivateKey(key)
  } catch (error) {
    throw new TlsFileError(`${labels.key}: ${files.key} holds no usable PEM private key (${(error as Error).message})`)
  }
  if (!certificate.checkPrivateKey(privateKey)) throw new TlsFileError(`${labels.key}: ${files.key} is not the key of the certificate in ${files.cert} (${labels.cert})`)
  let context: SecureContext
  try {
    context = createSecureContext({ cert, key, ...TLS_VERSIONS })
  } catch (error) {
    throw new TlsFileError(`${labels.cert}: ${files.cert} cannot be served: ${(error as Error).message}`)
  }
  return { files, names: namesOf(certificate), pem: { cert, key }, context }
}

/** What a reload did: the pairs read anew, and those kept as they were with the reason. */
export interface TlsReload {
  renewed: string[]
  kept: Array<{ cert: string, reason: string }>
}

/** Where a renewed default pair goes: a TLS server's default context, for clients that send no SNI. */
interface SecureServer {
  setSecureContext: (options: { cert: string, key: string, minVersion: 'TLSv1.2', maxVersion: 'TLSv1.3' }) => void
}

/**
 * The pairs by SNI: a handshake naming a host gets the first pair whose certificate covers it, any
 * other (no SNI, an unknown name) the first pair. A reload reads every pair's files again; a pair
 * that fails keeps its old certificate, so a bad renewal never takes a working name down. Open
 * connections keep the context they began with; new handshakes get the new one.
 */
export class TlsCertificates {
  #pairs: LoadedPair[]
  #labels: TlsLabels[]
  readonly #servers = new Set<SecureServer>()

  private constructor (pairs: LoadedPair[], labels: TlsLabels[]) {
    this.#pairs = pairs
    this.#labels = labels
  }

  /** Every pair read and checked; the first failure is thrown (a start refuses a bad pair). */
  static async load (files: TlsFiles[], labels: TlsLabels[]): Promise<TlsCertificates> {
    return new TlsCertificates(await Promise.all(files.map(async (pair, index) => await loadPair(pair, labels[index]!))), labels)
  }

  /** The files each pair is read from. */
  get files (): TlsFiles[] {
    return this.#pairs.map(({ files }) => files)
  }

  /** The TLS part of the server's options: the default pair, the SNI choice, the versions. */
  serverOptions (): { cert: string, key: string, SNICallback: (servername: string, done: (error: Error | null, context?: SecureContext) => void) => void, minVersion: 'TLSv1.2', maxVersion: 'TLSv1.3' } {
    return { ...this.#pairs[0]!.pem, ...TLS_VERSIONS, SNICallback: (servername, done) => { done(null, this.#select(servername)) } }
  }

  /** The server whose default context a reload renews. */
  attach (server: SecureServer): void {
    this.#servers.add(server)
  }

  #select (servername: string): SecureContext {
    const name = servername.toLowerCase()
    return (this.#pairs.find((pair) => pair.names.some((candidate) => covers(candidate, name))) ?? this.#pairs[0]!).context
  }

  /**
   * Reads the files again (`given`: a new list, as a config reload may bring, with labels for its
   * errors: its paths by default). A pair that fails keeps the one it replaces, if any; a new pair that fails is left
   * out. Never throws: what failed is in the answer, for the caller to log.
   */
  async reload (given?: TlsFiles[], givenLabels?: TlsLabels[]): Promise<TlsReload> {
    const files = given ?? this.files
    // A new list without labels: its files are named by their paths.
    const labels = givenLabels ?? (given === undefined ? this.#labels : files.map(({ cert, key }) => ({ cert, key })))
    const results = await Promise.allSettled(files.map(async (pair, index) => await loadPair(pair, labels[index]!)))
    const next: LoadedPair[] = []
    const nextLabels: TlsLabels[] = []
    const answer: TlsReload = { renewed: [], kept: [] }
    results.forEach((result, index) => {
      const old = this.#pairs[index]
      if (result.status === 'fulfilled') {
        next.push(result.value)
        nextLabels.push(labels[index]!)
        answer.renewed.push(result.value.files.cert)
      } else {
        const reason = (result.reason as Error).message
        answer.kept.push({ cert: files[index]!.cert, reason })
        if (old !== undefined) {
          next.push(old)
          nextLabels.push(this.#labels[index]!)
        }
      }
    })
    // Nothing loaded at all (every file of a new list broken): the old pairs stay, all of them.
    if (next.length === 0) return answer
    this.#pairs = next
    this.#labels = nextLabels
    for (const server of this.#servers) server.setSecureContext({ ...next[0]!.pem, ...TLS_VERSIONS })
    return answer
  }
}
