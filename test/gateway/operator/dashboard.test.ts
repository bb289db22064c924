// The Grafana dashboard in the repository asks only for metrics a gateway really serves, with labels
// it really has: a renamed metric or label fails here, not on an operator's screen.
import { readFile } from 'node:fs/promises'
import t from 'tap'
import { buildAdminServer, withProcessMetrics } from '../../../gateway/index.ts'
import { liveToken, signedInject } from '../../helpers/gateway.ts'
import { sampleRoutes } from '../../../gateway/config/gateway-config.ts'
import { buildTestApp } from '../../helpers/app.ts'
import { parseMetrics } from '../../helpers/metrics-text.ts'

interface Panel { title: string, targets: Array<{ expr: string }> }

const dashboard = JSON.parse(await readFile(new URL('../../../dashboards/macgate.json', import.meta.url), 'utf8')) as { panels: Panel[], templating: { list: Array<{ name: string }> } }

t.test('every metric and label the dashboard queries is served', async (t) => {
  // One route with a quota of 0, so that a quota rejection is counted too.
  const routes = [...sampleRoutes, { path: '/user/blocked', methods: ['GET'], scopes: [], match: 'all' as const, quota: { perMinute: 0 } }]
  const { app, store } = await buildTestApp(t, { store: 'redis', routes })
  const registry = withProcessMetrics(app.macgate.metrics.registry)
  const admin = await buildAdminServer({ metrics: async () => ({ contentType: registry.contentType, text: await registry.metrics() }), store })
  t.teardown(async () => { await admin.close() })
  // Traffic enough for every labelled series to exist: a verified call, a refused one, a token exchange.
  const token = await liveToken(app)
  t.equal((await signedInject(app, { url: '/user/profile', token: token.accessToken, macKey: token.macKey })).statusCode, 200)
  t.equal((await signedInject(app, { url: '/user/profile', token: token.accessToken, macKey: 'wrong' })).statusCode, 401)
  t.equal((await signedInject(app, { url: '/user/blocked', token: token.accessToken, macKey: token.macKey })).statusCode, 429)

  const scraped = parseMetrics((await admin.inject('/metrics')).body)
  const served = new Map<string, Set<string>>()
  for (const sample of scraped.samples) {
    const labels = served.get(sample.name) ?? new Set<string>()
    for (const label of Object.keys(sample.labels)) labels.add(label)
    served.set(sample.name, labels)
  }
  t.ok(dashboard.panels.length >= 10, `${dashboard.panels.length} panels`)
  for (const panel of dashboard.panels) {
    for (const { expr } of panel.targets) {
      for (const [, name, selector = ''] of expr.matchAll(/(macgate_[a-z_]+)(?:\{([^}]*)\})?/g)) {
        t.ok(served.has(name!), `${panel.title}: ${name} is served`)
        const labels = [...selector.matchAll(/([a-z_]+)\s*(?:=~|!=|=)/g)].map((match) => match[1]!).filter((label) => label !== 'job' && label !== 'instance')
        for (const label of labels) t.ok(served.get(name!)?.has(label), `${panel.title}: ${name} has label ${label}`)
      }
      for (const [, grouping] of expr.matchAll(/by \(([^)]*)\)/g)) {
        for (const label of grouping!.split(',').map((one) => one.trim()).filter((one) => one !== 'le' && one !== 'instance')) {
          t.ok([...served.values()].some((labels) => labels.has(label)), `${panel.title}: some metric has label ${label}`)
        }
      }
    }
  }
  t.strictSame(dashboard.templating.list.map(({ name }) => name), ['datasource', 'job', 'instance'])
})
