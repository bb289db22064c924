// Reloads in a running `macgate start`: SIGHUP and the admin listener's POST /admin/reload; under
// `--workers`, the primary passes each on to every worker and gathers their answers.
import cluster, { type Worker } from 'node:cluster'
import { randomUUID } from 'node:crypto'
import type { ReloadAnswer } from '../operator/reload.ts'

/** The admin listener's answer to POST /admin/reload. */
export interface AdminReload { status: number, body: unknown }

/** 200 with what changed; 400 with the refusal, which names the field. */
export function adminAnswer (answer: ReloadAnswer): AdminReload {
  return { status: answer.result === 'applied' ? 200 : 400, body: answer }
}

/** How long the primary waits for a worker's answer. */
const WORKER_ANSWER_MS = 30_000

interface ReloadMessage { macgate: 'reload', id: string }
interface ReloadedMessage { macgate: 'reloaded', id: string, answer: ReloadAnswer }

function isMessage<T extends { macgate: string }> (message: unknown, kind: T['macgate']): message is T {
  return typeof message === 'object' && message !== null && (message as { macgate?: unknown }).macgate === kind
}

/** A worker: reloads when the primary asks, and says how it went. */
export function answerPrimary (reload: () => Promise<ReloadAnswer>): void {
  process.on('message', (message: unknown) => {
    if (!isMessage<ReloadMessage>(message, 'reload')) return
    void reload().then((answer) => { process.send?.({ macgate: 'reloaded', id: message.id, answer } satisfies ReloadedMessage) })
  })
}

function workers (): Worker[] {
  return Object.values(cluster.workers ?? {}).filter((worker): worker is Worker => worker !== undefined)
}

/** The primary: SIGHUP goes on to every worker, each of which reloads its own config. */
export function forwardSighup (): void {
  process.on('SIGHUP', () => {
    for (const worker of workers()) worker.process.kill('SIGHUP')
  })
}

async function askWorker (worker: Worker): Promise<{ pid: number | undefined } & (ReloadAnswer | { result: 'no answer' })> {
  const id = randomUUID()
  const pid = worker.process.pid
  return await new Promise((resolve) => {
    const timer = setTimeout(() => { finish({ pid, result: 'no answer' }) }, WORKER_ANSWER_MS)
    function listen (message: unknown): void {
      if (isMessage<ReloadedMessage>(message, 'reloaded') && message.id === id) finish({ pid, ...message.answer })
    }
    function finish (answer: { pid: number | undefined } & (ReloadAnswer | { result: 'no answer' })): void {
      clearTimeout(timer)
      worker.off('message', listen)
      worker.off('exit', gone)
      resolve(answer)
    }
    function gone (): void { finish({ pid, result: 'no answer' }) }
    worker.on('message', listen)
    worker.on('exit', gone)
    worker.send({ macgate: 'reload', id } satisfies ReloadMessage)
  })
}

/**
 * The primary's POST /admin/reload: the config is checked here first (a bad one is refused before
 * any worker is asked), then every worker reloads and answers. 200 when all applied it; 400 when
 * one refused it (the file changed in between); 503 when one did not answer.
 */
export async function reloadWorkers (check: () => Promise<unknown>): Promise<AdminReload> {
  try {
    await check()
  } catch (error) {
    return { status: 400, body: { result: 'refused', error: (error as Error).message } }
  }
  const answers = await Promise.all(workers().map(askWorker))
  const status = answers.some(({ result }) => result === 'no answer') ? 503 : answers.some(({ result }) => result === 'refused') ? 400 : 200
  return { status, body: { result: status === 200 ? 'applied' : 'incomplete', workers: answers } }
}
