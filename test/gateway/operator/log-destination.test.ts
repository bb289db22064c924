// macgate's log destination: every line reaches the file, in order, byte for byte as UTF-8, whether
// written whole or in parts, across the chunks' boundaries; on a flush, and at exit.
import { once } from 'node:events'
import { mkdtemp, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { LogDestination } from '../../../gateway/operator/log-destination.ts'
import { spawnSource } from '../../helpers/source.ts'
import { partsOf, testLines } from './log-lines.ts'

async function folder (t: { teardown: (fn: () => Promise<void>) => void }): Promise<string> {
  const directory = await mkdtemp(join(tmpdir(), 'macgate-log-'))
  t.teardown(async () => { await rm(directory, { recursive: true, force: true }) })
  return directory
}

/** What the file should hold: each line as Buffer.from encodes it (a lone surrogate as U+FFFD). */
const expected = (lines: string[]): Buffer => Buffer.concat(lines.map((line) => Buffer.from(line, 'utf8')))

/** Where two files' bytes first differ, or -1: a readable failure, where a diff of 650 KB would not be. */
function firstDifference (got: Buffer, want: Buffer): number {
  for (let i = 0; i < Math.max(got.length, want.length); i++) if (got[i] !== want[i]) return i
  return -1
}

t.test('whole lines and lines in parts, in order, byte for byte, after flushSync', async (t) => {
  const file = join(await folder(t), 'log')
  const destination = new LogDestination(file)
  const lines = testLines()
  let accepted = 0
  for (const [index, line] of lines.entries()) {
    if (index % 3 === 0) accepted += destination.write(line) ? 1 : 0
    else for (const part of partsOf(line, 1 + (index % 11))) destination.put(part)
  }
  t.equal(accepted, Math.ceil(lines.length / 3), 'write takes every whole line')
  // sonic-boom opens the file in the background: its synchronous flush needs it open.
  await new Promise((resolve) => setTimeout(resolve, 50))
  destination.flushSync()
  t.equal(firstDifference(await readFile(file), expected(lines)), -1, `${lines.length} lines, byte for byte`)
})

t.test('flush hands over what is written: the lines reach the file without another line after them', async (t) => {
  const file = join(await folder(t), 'log')
  const destination = new LogDestination(file)
  destination.write('{"first":1}\n')
  destination.put('{"second":')
  destination.put('2}\n')
  await new Promise<void>((resolve, reject) => { destination.flush((error) => { if (error === undefined || error === null) resolve(); else reject(error) }) })
  let content = ''
  for (let tries = 0; tries < 100 && content === ''; tries++) {
    await new Promise((resolve) => setTimeout(resolve, 20))
    content = await readFile(file, 'utf8')
  }
  t.equal(content, '{"first":1}\n{"second":2}\n', 'both lines, from an asynchronous write')
})

t.test('a process that exits without flushing loses no line (the exit flush)', async (t) => {
  const file = join(await folder(t), 'log')
  const child = spawnSource('test/fixtures/log-lines.ts', [file], { stdio: 'inherit' })
  const [code] = await once(child, 'exit') as [number | null]
  t.equal(code, 0)
  t.equal(firstDifference(await readFile(file), expected(testLines())), -1, 'every line, in order, byte for byte')
})
