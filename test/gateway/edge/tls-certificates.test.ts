// TLS on the public listener: the versions offered (Debian's openssl s_client for what Node's client
// can no longer offer, TLS 1.1), SNI, a renewal in flight, a chain, and bad settings named.
import { execFile } from 'node:child_process'
import { once } from 'node:events'
import { copyFile, rm, writeFile } from 'node:fs/promises'
import { connect as tlsConnect } from 'node:tls'
import { join } from 'node:path'
import { promisify } from 'node:util'
import t from 'tap'
import { buildGateway, parseConfig } from '../../../gateway/index.ts'
import { MemoryStore } from '../../../plugin/index.ts'
import { serialOf } from '../../helpers/certs.ts'
import { h2Request } from '../../helpers/h2.ts'
import { runInProcess } from '../../helpers/in-process.ts'
import { cliEnv } from '../../helpers/cli.ts'
import { ca, handshake, main, session, tlsGateway, withTestCa } from '../../helpers/tls-gateway.ts'

withTestCa(t)

const run = promisify(execFile)

t.test('TLS 1.2 and 1.3 only: a client offering only TLS 1.1 is refused', async (t) => {
  const { port } = await tlsGateway(t)
  // s_client reads stdin: an empty one makes it close after the handshake.
  const sClient = async (...args: string[]): Promise<{ code: number, out: string }> => {
    const running = run('openssl', ['s_client', '-connect', `127.0.0.1:${port}`, '-servername', 'localhost', '-CAfile', join(ca.dir, 'ca.pem'), ...args], { timeout: 10_000 })
    running.child.stdin!.end()
    try {
      const { stdout, stderr } = await running
      return { code: 0, out: stdout + stderr }
    } catch (error) {
      const failed = error as { code: number, stdout: string, stderr: string }
      return { code: failed.code, out: failed.stdout + failed.stderr }
    }
  }
  const old = await sClient('-tls1_1', '-cipher', 'DEFAULT@SECLEVEL=0')
  t.not(old.code, 0, 'openssl s_client -tls1_1 fails')
  t.match(old.out, /alert protocol version|no protocols available|unsupported protocol|wrong version number/i, 'refused for its version')
  const tls12 = await sClient('-tls1_2')
  t.equal(tls12.code, 0, 'TLS 1.2 is served')
  t.match(tls12.out, /Verify return code: 0 \(ok\)/)
  t.equal((await handshake(port, 'localhost')).protocol, 'TLSv1.3', 'TLS 1.3 is served')
})

t.test('SNI picks the certificate by name, the first pair for any other name or none', async (t) => {
  const a = await ca.issue('sni-a', ['a.test', '*.wild.test'])
  const b = await ca.issue('sni-b', ['b.test'])
  const { port } = await tlsGateway(t, { tls: [{ cert: a.cert, key: a.key }, { cert: b.cert, key: b.key }] })
  t.equal((await handshake(port, 'b.test')).serial, serialOf(b.certPem), 'b.test gets its own')
  t.equal((await handshake(port, 'a.test')).serial, serialOf(a.certPem), 'a.test')
  t.equal((await handshake(port, 'x.wild.test')).serial, serialOf(a.certPem), 'a wildcard name')
  t.equal((await handshake(port, 'B.TEST')).serial, serialOf(b.certPem), 'names compare without case')
  t.equal((await handshake(port, 'c.test').catch(() => ({ serial: 'refused by the client' }))).serial, 'refused by the client', 'an unknown name gets the default, which the verifying client refuses')
  t.equal((await handshake(port)).serial, serialOf(a.certPem), 'no SNI: the first pair')
  const h2 = await session(t, port, 'b.test')
  t.equal((await h2Request(h2, { ':path': '/health/live' })).status, 200, 'HTTP/2 under the SNI-chosen certificate')

  const named = await ca.issue('sni-cn', ['cn.test'], { san: false })
  const byCommonName = await tlsGateway(t, { tls: [{ cert: a.cert, key: a.key }, { cert: named.cert, key: named.key }] })
  t.equal((await handshake(byCommonName.port, 'cn.test')).serial, serialOf(named.certPem), 'a certificate without alternative names is chosen by its common name')
})

t.test('a renewal: new handshakes get the new certificate, open connections keep working; a bad pair keeps the old one', async (t) => {
  const dir = t.testdir()
  const cert = join(dir, 'live.pem')
  const key = join(dir, 'live.key')
  await copyFile(main.cert, cert)
  await copyFile(main.key, key)
  const { app, port, log } = await tlsGateway(t, { tls: { cert, key } })
  const before = await session(t, port)
  t.equal((await h2Request(before, { ':path': '/health/live' })).status, 200)
  t.equal((await handshake(port, 'localhost')).serial, serialOf(main.certPem))

  const renewed = await ca.issue('renewed', ['localhost'])
  await copyFile(renewed.cert, cert)
  await copyFile(renewed.key, key)
  t.same(await app.reloadTls(), { renewed: [cert], kept: [] })
  t.equal((await handshake(port, 'localhost')).serial, serialOf(renewed.certPem), 'a new handshake gets the renewed certificate')
  t.equal((await handshake(port)).serial, serialOf(renewed.certPem), 'without SNI too (the server\'s default context)')
  t.equal((await h2Request(before, { ':path': '/health/live' })).status, 200, 'the session opened before keeps working')
  t.ok(log.lines.some((line) => line.msg === 'tls certificates reloaded' && line.level === 30))

  // A key that is not the certificate's: the pair stays as it was, said at error.
  const other = await ca.issue('other', ['localhost'])
  await copyFile(other.key, key)
  const mismatched = await app.reloadTls()
  t.same(mismatched.renewed, [])
  t.match(mismatched.kept, [{ cert, reason: `config.tls.key: ${key} is not the key of the certificate in ${cert} (config.tls.cert)` }])
  t.ok(log.lines.some((line) => line.level === 50 && line.msg === 'tls certificate not renewed: the old one stays' && String(line.reason).includes('is not the key')), 'logged at error')
  t.equal((await handshake(port, 'localhost')).serial, serialOf(renewed.certPem), 'the old pair still serves')

  await rm(cert)
  const unreadable = await app.reloadTls()
  t.match(unreadable.kept, [{ reason: /^config\.tls\.cert: cannot read .*: ENOENT$/ }], 'a missing file')
  await writeFile(cert, 'not a certificate')
  t.match((await app.reloadTls()).kept, [{ reason: /holds no PEM certificate/ }], 'a file that is no certificate')
  t.equal((await handshake(port, 'localhost')).serial, serialOf(renewed.certPem), 'still the last good pair')
  t.equal((await h2Request(before, { ':path': '/health/live' })).status, 200)

  // A config reload may bring a new list: each pair read, one that fails left out with its reason.
  const fresh = await ca.issue('fresh', ['localhost'])
  const listed = await app.reloadTls([{ cert: fresh.cert, key: fresh.key }, { cert: join(dir, 'nothing.pem'), key }], [{ cert: 'config.tls[0].cert', key: 'config.tls[0].key' }, { cert: 'config.tls[1].cert', key: 'config.tls[1].key' }])
  t.same(listed.renewed, [fresh.cert])
  t.match(listed.kept, [{ reason: /^config\.tls\[1\]\.cert: cannot read/ }])
  t.equal((await handshake(port, 'localhost')).serial, serialOf(fresh.certPem))
  const nothing = join(dir, 'nothing.pem')
  const broken = await app.reloadTls([{ cert: nothing, key: nothing }, { cert: nothing, key: nothing }])
  t.match(broken.kept, [{ reason: `${nothing}: cannot read ${nothing}: ENOENT` }, {}], 'a new list where nothing loads (named by path without labels)...')
  t.equal((await handshake(port, 'localhost')).serial, serialOf(fresh.certPem), '...leaves every old pair serving')
})

t.test('a bad TLS setting fails the start naming the field or flag', async (t) => {
  const dir = t.testdir({ 'gateway.json': JSON.stringify({ tls: { cert: 'missing.pem', key: 'missing.key' } }) })
  const env = cliEnv({ PORT: '0' })
  const missing = await runInProcess(['start', '--config', join(dir, 'gateway.json')], env)
  t.equal(missing.code, 2)
  t.match(missing.stderr, `macgate: config.tls.cert: cannot read ${join(dir, 'missing.pem')}: ENOENT`, 'the path is the config file\'s directory\'s')
  const other = await ca.issue('start-other', ['localhost'])
  const mismatched = await runInProcess(['start', '--tls-cert', main.cert, '--tls-key', other.key], env)
  t.equal(mismatched.code, 2)
  t.match(mismatched.stderr, /^macgate: --tls-key: .* is not the key of the certificate in .* \(--tls-cert\)/)
  const half = await runInProcess(['start', '--tls-cert', main.cert], env)
  t.equal(half.code, 2)
  t.match(half.stderr, 'start: --tls-cert needs --tls-key')
  t.match((await runInProcess(['start', '--tls-key', main.key], env)).stderr, '--tls-key needs --tls-cert')
  const listed = join(dir, 'listed.json')
  await writeFile(listed, JSON.stringify({ tls: [{ cert: main.cert, key: main.key }, { cert: main.cert, key: join(dir, 'gone.key') }] }))
  t.match((await runInProcess(['start', '--config', listed], env)).stderr, 'macgate: config.tls[1].key: cannot read')
  await t.rejects(buildGateway({ store: new MemoryStore(), config: { tls: [{ cert: main.key, key: main.key }] } }), { name: 'TlsFileError', message: /^config\.tls\.cert: .* holds no PEM certificate$/ })
  await t.rejects(buildGateway({ store: new MemoryStore(), config: { tls: [{ cert: main.cert, key: main.cert }] } }), { message: /^config\.tls\.key: .* holds no usable PEM private key/ })
  const weak = await ca.issue('weak', ['localhost'], { key: 'rsa:512' })
  await t.rejects(buildGateway({ store: new MemoryStore(), config: { tls: [{ cert: weak.cert, key: weak.key }] } }), { message: /^config\.tls\.cert: .* cannot be served: .*too small/ }, 'a key OpenSSL refuses at its security level')
})

t.test('the config\'s edge fields: each bad one named', async (t) => {
  const cases: Array<[unknown, string]> = [
    [{ tls: 'cert.pem' }, 'config.tls must be {"cert": FILE, "key": FILE}'],
    [{ tls: { cert: 'a.pem' } }, 'config.tls.key must be a file path'],
    [{ tls: { cert: 'a.pem', key: 'a.key', ca: 'x' } }, 'config.tls has an unknown field ca (known: cert, key)'],
    [{ tls: [] }, 'config.tls must list 1 to 32 pairs'],
    [{ tls: [{ cert: 'a.pem', key: 'a.key' }, { cert: '', key: 'b.key' }] }, 'config.tls[1].cert must be a file path'],
    [{ http2: 'yes' }, 'config.http2 must be true, false or {"maxConcurrentStreams": N}'],
    [{ http2: { maxConcurrentStreams: 0 } }, 'config.http2.maxConcurrentStreams must be a whole number from 1 to 10000'],
    [{ http2: { streams: 1 } }, 'config.http2 has an unknown field streams (known: maxConcurrentStreams)'],
    [{ hsts: 1 }, 'config.hsts must be true, false or {"maxAgeSeconds": N, "includeSubDomains": BOOLEAN}'],
    [{ hsts: { maxAgeSeconds: -1 } }, 'config.hsts.maxAgeSeconds must be a whole number from 0 to 63072000'],
    [{ hsts: { includeSubDomains: 'yes' } }, 'config.hsts.includeSubDomains must be boolean'],
    [{ hsts: { preload: true } }, 'config.hsts has an unknown field preload (known: maxAgeSeconds, includeSubDomains)']
  ]
  for (const [input, message] of cases) t.throws(() => parseConfig(input), { name: 'ConfigError', message: `invalid config: ${message}` }, message)
  t.match(parseConfig({}), { http2: { maxConcurrentStreams: 100 }, hsts: { maxAgeSeconds: 31536000, includeSubDomains: false } }, 'the defaults')
  t.notOk('tls' in parseConfig({}), 'no TLS unless asked')
  t.match(parseConfig({ tls: { cert: 'a', key: 'b' }, http2: true, hsts: true }), { tls: [{ cert: 'a', key: 'b' }], http2: { maxConcurrentStreams: 100 }, hsts: { maxAgeSeconds: 31536000 } })
  t.match(parseConfig({ http2: false, hsts: false }), { http2: false, hsts: false })
})

t.test('a cert file holding the chain: the intermediate is served, and a client trusting only the root verifies it', async (t) => {
  const chained = await ca.issueChained('chained', ['localhost'])
  const { port } = await tlsGateway(t, { tls: { cert: chained.cert, key: chained.key } })
  const socket = tlsConnect({ host: '127.0.0.1', port, ca: ca.pem, servername: 'localhost' })
  socket.on('error', () => {})
  await once(socket, 'secureConnect')
  t.equal(socket.authorized, true, 'verified against the root alone')
  const presented = socket.getPeerCertificate(true)
  t.equal(presented.serialNumber, serialOf(chained.certPem), 'the leaf first')
  t.match(presented.issuerCertificate.subject.CN, 'chained intermediate', 'then the intermediate from the file')
  socket.destroy()
})
