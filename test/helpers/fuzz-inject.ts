// The fuzz's inject phase: probes sent through inject in batches, each answer judged and tallied.
import { type Gen } from './fuzz-pools.ts'
import { type FastifyInstance, type InjectOptions } from 'fastify'
import { type World } from './fuzz-world.ts'
import { nextProbe, type Probe } from './fuzz-probes.ts'
import { type Answer, judge, kindOf, reachedOf, Tally } from './fuzz-judge.ts'

const BATCH = 50

/** An inject that fails to produce an answer comes back as status 0 with the error, judged as no answer. */
async function sendInject (app: FastifyInstance, probe: Probe): Promise<Answer> {
  const options = { method: probe.method, url: probe.url, headers: probe.headers, remoteAddress: probe.remoteAddress, ...(probe.payload !== undefined && { payload: probe.payload }) } as InjectOptions
  try {
    const response = await app.inject(options)
    return { status: response.statusCode, headers: response.headers, body: response.body }
  } catch (error) {
    return { status: 0, headers: {}, body: `inject failed: ${String(error)}` }
  }
}

/** `count` inject probes from `g`, `BATCH` at a time. */
export async function injectPhase (app: FastifyInstance, g: Gen, world: () => World, count: number, phase: string, tally: Tally, outage: () => boolean): Promise<void> {
  for (let start = 0; start < count; start += BATCH) {
    const probes: Probe[] = []
    for (let i = start; i < Math.min(start + BATCH, count); i++) probes.push(nextProbe(g, world(), i, phase))
    const answers = await Promise.all(probes.map(async (probe) => await sendInject(app, probe)))
    probes.forEach((probe, i) => {
      const answer = answers[i]!
      tally.add(answer.status, judge(probe, answer, outage()), reachedOf(kindOf(probe.method, probe.url), answer))
      if (probe.expectServed === true && answer.status === 200) {
        tally.served++
        if (world().sent.length < 200) world().sent.push({ method: probe.method, url: probe.url, authorization: probe.headers.authorization! })
      }
    })
  }
}
