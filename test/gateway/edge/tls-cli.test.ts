// A renewed certificate reaching a running `macgate start` (a real process): the files swapped on
// disk, SIGHUP, and new handshakes get the new certificate while an open HTTP/2 session goes on.
import { once } from 'node:events'
import { copyFile } from 'node:fs/promises'
import { join } from 'node:path'
import { connect as tlsConnect } from 'node:tls'
import t from 'tap'
import { testCa, serialOf } from '../../helpers/certs.ts'
import { cliEnv, spawnCli } from '../../helpers/cli.ts'
import { h2Request, h2Session } from '../../helpers/h2.ts'
import { eventually } from '../../helpers/live.ts'
import { freePort } from '../../helpers/redis.ts'

t.setTimeout(120_000)

t.test('macgate start --config with "tls": SIGHUP renews the certificate, a bad pair keeps the old one', async (t) => {
  const dir = t.testdir({ 'gateway.json': JSON.stringify({ tls: { cert: 'certs/live.pem', key: 'certs/live.key' } }), certs: {} })
  const ca = await testCa(dir)
  const first = await ca.issue('first', ['localhost'])
  const second = await ca.issue('second', ['localhost'])
  const stray = await ca.issue('stray', ['localhost'])
  const cert = join(dir, 'certs', 'live.pem')
  const key = join(dir, 'certs', 'live.key')
  await copyFile(first.cert, cert)
  await copyFile(first.key, key)

  const port = await freePort()
  // Started from another directory: the config's paths are its own directory's.
  const child = spawnCli(['start', '--config', join(dir, 'gateway.json')], cliEnv({ PORT: String(port) }))
  let output = ''
  child.stdout!.on('data', (chunk) => { output += String(chunk) })
  child.stderr!.on('data', (chunk) => { output += String(chunk) })
  const exited = once(child, 'exit') as Promise<[number | null, string | null]>
  t.teardown(() => { if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL') })
  t.ok(await eventually(async () => output.includes('Server listening at'), 30_000, 50), `started: ${output}`)
  t.match(output, `Server listening at https://127.0.0.1:${port}`)
  t.match(output, `demo page    https://127.0.0.1:${port}/demo`, 'the demo is served over TLS too')

  const serial = async (): Promise<string> => {
    const socket = tlsConnect({ host: '127.0.0.1', port, servername: 'localhost', ca: ca.pem })
    socket.on('error', () => {})
    await once(socket, 'secureConnect')
    const answer = socket.getPeerCertificate().serialNumber
    socket.destroy()
    return answer
  }
  t.equal(await serial(), serialOf(first.certPem))
  const open = await h2Session(port, ca.pem)
  t.teardown(() => open.destroy())
  t.equal((await h2Request(open, { ':path': '/health/live' })).status, 200)

  await copyFile(second.cert, cert)
  await copyFile(second.key, key)
  child.kill('SIGHUP')
  t.ok(await eventually(async () => await serial() === serialOf(second.certPem), 10_000, 100), 'after SIGHUP, new handshakes get the renewed certificate')
  t.equal((await h2Request(open, { ':path': '/health/live' })).status, 200, 'the session opened before goes on')
  t.ok(await eventually(async () => output.includes('"msg":"tls certificates reloaded"'), 5000, 100), 'logged')

  await copyFile(stray.key, key)
  child.kill('SIGHUP')
  t.ok(await eventually(async () => /"level":50[^\n]*"msg":"tls certificate not renewed: the old one stays"/.test(output), 5000, 100), 'a key that does not match: logged at error')
  t.match(output, /"reason":"config\.tls\.key: [^"]*live\.key is not the key of the certificate in [^"]*live\.pem \(config\.tls\.cert\)"/)
  t.equal(await serial(), serialOf(second.certPem), 'the last good certificate still serves')
  t.equal(child.exitCode, null, 'still running')

  open.destroy()
  child.kill('SIGTERM')
  const [code] = await exited
  t.equal(code, 0, 'SIGTERM: exit 0')
  t.notMatch(output, /^macgate: /m, 'no failure said')
})
