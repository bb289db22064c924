// The request-duration histogram keeps plain numbers and turns them into prom-client's exposition
// at scrape time: what an operator scrapes must be what prom-client's own Histogram would give.
import t from 'tap'
import { AggregatorRegistry, Histogram, Registry } from 'prom-client'
import { PlainHistogram } from '../../../plugin/observe/plain-histogram.ts'

const BUCKETS = [0.0001, 0.001, 0.01, 0.1, 1]
const LABELS = ['route', 'method', 'status_class'] as const
const OBSERVED: Array<[string, string, string, number]> = [
  ['/api/*', 'GET', '2xx', 0.00005], ['/api/*', 'GET', '2xx', 0.0001], ['/api/*', 'GET', '2xx', 0.0004],
  ['/api/*', 'GET', '4xx', 0.02], ['/oauth2/token', 'POST', '2xx', 3], ['/api/*', 'GET', '2xx', 1]
]

/** Both histograms fed the same observations, each on a registry of its own, under one name. */
function fed (): { plain: Registry, reference: Registry, histogram: PlainHistogram<typeof LABELS[number]> } {
  const plain = new Registry()
  const reference = new Registry()
  const histogram = new PlainHistogram({ name: 'x_seconds', help: 'h', labelNames: LABELS, buckets: BUCKETS, registers: [plain] })
  const own = new Histogram({ name: 'x_seconds', help: 'h', labelNames: LABELS, buckets: BUCKETS, registers: [reference] })
  const children = new Map<string, ReturnType<typeof histogram.labels>>()
  for (const [route, method, status, seconds] of OBSERVED) {
    const key = `${route} ${method} ${status}`
    let child = children.get(key)
    if (child === undefined) children.set(key, child = histogram.labels(route, method, status))
    child.observe(seconds)
    own.labels(route, method, status).observe(seconds)
  }
  return { plain, reference, histogram }
}

t.test('the text exposition is prom-client\'s, line for line', async (t) => {
  const { plain, reference } = fed()
  t.equal(await plain.metrics(), await reference.metrics())
  plain.setContentType(Registry.OPENMETRICS_CONTENT_TYPE as never)
  reference.setContentType(Registry.OPENMETRICS_CONTENT_TYPE as never)
  t.equal(await plain.metrics(), await reference.metrics(), 'and the OpenMetrics one')
})

t.test('the workers\' aggregation sums it as it sums a prom-client histogram', async (t) => {
  const one = fed()
  const two = fed()
  const ref = fed()
  const ref2 = fed()
  const plain = AggregatorRegistry.aggregate([await one.plain.getMetricsAsJSON(), await two.plain.getMetricsAsJSON()])
  const reference = AggregatorRegistry.aggregate([await ref.reference.getMetricsAsJSON(), await ref2.reference.getMetricsAsJSON()])
  t.equal(await plain.metrics(), await reference.metrics())
  t.match(await plain.metrics(), /x_seconds_count\{route="\/api\/\*",method="GET",status_class="2xx"\} 8/)
})

t.test('reset zeroes the counts; the children held keep counting', async (t) => {
  const { plain, histogram } = fed()
  const child = histogram.labels('/r', 'GET', '2xx')
  histogram.reset()
  t.match(await plain.metrics(), /x_seconds_count\{route="\/api\/\*",method="GET",status_class="2xx"\} 0/)
  child.observe(0.5)
  t.match(await plain.metrics(), /x_seconds_bucket\{le="1",route="\/r",method="GET",status_class="2xx"\} 1/)
  t.throws(() => histogram.labels('/r'), /takes 3 label values/)
})
