// The Prometheus text exposition format (0.0.4) read back by hand, so that tests assert on what a
// scraper sees rather than on prom-client's own objects: `name{a="b",c="d"} value [timestamp]`.

export interface Sample {
  name: string
  labels: Record<string, string>
  value: number
}

const NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*/
const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*/

function parseValue (text: string): number {
  if (text === '+Inf') return Infinity
  if (text === '-Inf') return -Infinity
  if (text === 'NaN') return NaN
  const value = Number(text)
  if (text === '' || Number.isNaN(value)) throw new Error(`not a sample value: ${text}`)
  return value
}

/** One sample line; throws on anything that is not the format. */
export function parseSampleLine (line: string): Sample {
  const name = NAME.exec(line)?.[0]
  if (name === undefined) throw new Error(`no metric name: ${line}`)
  let rest = line.slice(name.length)
  const labels: Record<string, string> = {}
  if (rest.startsWith('{')) {
    rest = rest.slice(1)
    for (;;) {
      rest = rest.trimStart()
      if (rest.startsWith('}')) { rest = rest.slice(1); break }
      const label = LABEL_NAME.exec(rest)?.[0]
      if (label === undefined || rest[label.length] !== '=' || rest[label.length + 1] !== '"') throw new Error(`bad label in: ${line}`)
      rest = rest.slice(label.length + 2)
      let value = ''
      let i = 0
      for (; i < rest.length && rest[i] !== '"'; i++) {
        if (rest[i] === '\\') {
          const next = rest[++i]
          value += next === 'n' ? '\n' : next
        } else {
          value += rest[i]
        }
      }
      if (i >= rest.length) throw new Error(`unterminated label value in: ${line}`)
      if (label in labels) throw new Error(`label ${label} repeated in: ${line}`)
      labels[label] = value
      rest = rest.slice(i + 1).trimStart()
      if (rest.startsWith(',')) rest = rest.slice(1)
      else if (!rest.startsWith('}')) throw new Error(`expected , or } in: ${line}`)
    }
  }
  if (!/^[ \t]/.test(rest)) throw new Error(`no value in: ${line}`)
  const [valueText = '', timestamp] = rest.trim().split(/[ \t]+/)
  if (timestamp !== undefined && !/^-?\d+$/.test(timestamp)) throw new Error(`bad timestamp in: ${line}`)
  return { name, labels, value: parseValue(valueText) }
}

function includes (labels: Record<string, string>, wanted: Record<string, string>): boolean {
  return Object.entries(wanted).every(([name, value]) => labels[name] === value)
}

/** A scrape, parsed: samples by name and labels, and each metric's `# TYPE`. */
export class MetricsText {
  readonly samples: Sample[] = []
  readonly types = new Map<string, string>()

  readonly text: string

  constructor (text: string) {
    this.text = text
    for (const raw of text.split('\n')) {
      const line = raw.trim()
      if (line === '') continue
      if (line.startsWith('#')) {
        const type = /^# TYPE ([a-zA-Z_:][a-zA-Z0-9_:]*) (\w+)$/.exec(line)
        if (type !== null) this.types.set(type[1]!, type[2]!)
        continue
      }
      this.samples.push(parseSampleLine(line))
    }
  }

  /** Samples of `name` whose labels include every one of `labels`. */
  find (name: string, labels: Record<string, string> = {}): Sample[] {
    return this.samples.filter((sample) => sample.name === name && includes(sample.labels, labels))
  }

  /** The one sample of `name` with exactly `labels`; undefined when there is none. */
  value (name: string, labels: Record<string, string> = {}): number | undefined {
    const found = this.samples.filter((sample) => sample.name === name &&
      Object.keys(sample.labels).length === Object.keys(labels).length && includes(sample.labels, labels))
    if (found.length > 1) throw new Error(`${found.length} samples of ${name} ${JSON.stringify(labels)}`)
    return found[0]?.value
  }

  /** The sum of every sample of `name` whose labels include `labels` (0 when there is none). */
  sum (name: string, labels: Record<string, string> = {}): number {
    return this.find(name, labels).reduce((total, sample) => total + sample.value, 0)
  }

  /** The distinct values a label takes across the samples of `name`. */
  labelValues (name: string, label: string): string[] {
    return [...new Set(this.find(name).map((sample) => sample.labels[label]).filter((value): value is string => value !== undefined))]
  }

  has (name: string): boolean {
    return this.samples.some((sample) => sample.name === name)
  }
}

export function parseMetrics (text: string): MetricsText {
  return new MetricsText(text)
}
