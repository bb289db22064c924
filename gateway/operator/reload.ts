// A new gateway config while serving (SIGHUP, POST /admin/reload): validated whole first, then
// each part that can change in flight takes its fields; whatever else changed waits for a restart.
import { Counter, Gauge, type Registry } from 'prom-client'
import type { FastifyBaseLogger } from 'fastify'
import type { GatewayConfig } from '../config/gateway-config.ts'

/** What one part did with a new config: fields it applied that changed, and those it could not take in flight. */
export interface PartOutcome {
  changed?: string[]
  needsRestart?: string[]
}

/**
 * A part of the gateway that re-applies its fields of the config (routes and upstreams, the
 * plugin's swappable settings, the client timeouts, the TLS files...). Called at every reload with
 * the new config and the running one, even when its fields are unchanged (TLS files are re-read
 * whatever the config says). Without an answer, every one of its fields that differs counts as
 * changed (but those it reports as needing a restart). It may set a field it leaves as it runs back to
 * its running value in `next`. It must not throw for a config that passed validation: what it
 * cannot apply, it reports.
 */
export interface Reloader {
  /** The config's top-level fields this part applies in flight. */
  fields: readonly string[]
  apply: (next: GatewayConfig, previous: GatewayConfig) => PartOutcome | undefined | Promise<PartOutcome | undefined>
}

export type ReloadAnswer =
  | { result: 'applied', changed: string[], needsRestart: string[] }
  | { result: 'refused', error: string }

function same (a: unknown, b: unknown): boolean {
  return JSON.stringify(a) === JSON.stringify(b)
}

/** The running config and the parts that re-apply it; `reload` takes a new one. */
export class ConfigReload {
  readonly #reloaders: Reloader[] = []
  readonly #log: FastifyBaseLogger
  readonly #counts: Counter<'result'>
  readonly #appliedAt: Gauge
  #current: GatewayConfig
  /** One reload at a time: a second SIGHUP while one runs waits for it. */
  #queue: Promise<unknown> = Promise.resolve()

  constructor (current: GatewayConfig, registry: Registry, log: FastifyBaseLogger) {
    this.#current = current
    this.#log = log
    this.#counts = new Counter({ name: 'macgate_config_reloads_total', help: 'Config reloads, by result: applied, or refused (a config that does not parse or validate; the running one stays)', labelNames: ['result'], registers: [registry] })
    this.#counts.inc({ result: 'applied' }, 0)
    this.#counts.inc({ result: 'refused' }, 0)
    // Under workers the primary's sum would be meaningless: the latest of them.
    this.#appliedAt = new Gauge({ name: 'macgate_config_applied_timestamp_seconds', help: 'When the running config was applied (the start, or the last applied reload), Unix seconds', registers: [registry], aggregator: 'max' })
    this.#appliedAt.set(Date.now() / 1000)
  }

  /** The config as it runs: a field that needs a restart keeps its running value here. */
  get current (): GatewayConfig {
    return this.#current
  }

  /** Adds a part that re-applies its fields (the TLS files' is one line at the gateway's start). */
  register (reloader: Reloader): void {
    this.#reloaders.push(reloader)
  }

  /**
   * Reads a new config (`read`: the file again, environment settings winning as at the start) and,
   * if it validates, applies it. A config that fails is refused whole, logged at error with the
   * field's name, and the running one stays.
   */
  async reload (read: () => Promise<GatewayConfig>): Promise<ReloadAnswer> {
    const turn = this.#queue.then(async () => await this.#reload(read))
    this.#queue = turn.catch(() => {})
    return await turn
  }

  async #reload (read: () => Promise<GatewayConfig>): Promise<ReloadAnswer> {
    let next: GatewayConfig
    try {
      next = await read()
    } catch (error) {
      const message = (error as Error).message
      this.#counts.inc({ result: 'refused' })
      this.#log.error({ error: message }, 'config refused; the running config stays')
      return { result: 'refused', error: message }
    }
    const previous = this.#current
    const differing = Object.keys({ ...previous, ...next }).filter((field) => !same((previous as unknown as Record<string, unknown>)[field], (next as unknown as Record<string, unknown>)[field]))
    const claimed = new Set(this.#reloaders.flatMap(({ fields }) => fields))
    const needsRestart = new Set(differing.filter((field) => !claimed.has(field)))
    const changed = new Set<string>()
    // What is not applied keeps its running value, so that the next reload reports it again.
    const running = { ...next } as Record<string, unknown>
    for (const field of needsRestart) running[field] = (previous as unknown as Record<string, unknown>)[field]
    for (const reloader of this.#reloaders) {
      const outcome = await reloader.apply(running as unknown as GatewayConfig, previous)
      const mine = differing.filter((field) => reloader.fields.includes(field))
      for (const field of outcome?.changed ?? mine.filter((name) => outcome?.needsRestart?.includes(name) !== true)) changed.add(field)
      for (const field of outcome?.needsRestart ?? []) needsRestart.add(field)
    }
    this.#current = running as unknown as GatewayConfig
    this.#counts.inc({ result: 'applied' })
    this.#appliedAt.set(Date.now() / 1000)
    // Sorted: the same answer for the same change, whatever order the file has its fields in.
    const ordered = (fields: Set<string>): string[] => [...fields].sort()
    const answer = { result: 'applied' as const, changed: ordered(changed), needsRestart: ordered(needsRestart) }
    if (answer.needsRestart.length > 0) this.#log.warn({ needsRestart: answer.needsRestart }, 'config fields that take effect only after a restart')
    this.#log.info({ changed: answer.changed, needsRestart: answer.needsRestart, routes: (running.routes as unknown[]).length }, 'config reloaded')
    return answer
  }
}
