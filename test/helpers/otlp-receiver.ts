// An OTLP/HTTP trace receiver for tests: decodes what an exporter sends, protobuf with the official
// proto definitions (the generated root an @opentelemetry/otlp-transformer release shipped) or
// JSON, and keeps every raw body, so that a test can search the exact bytes for secrets.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import { createRequire } from 'node:module'
import type { Test } from 'tap'
import { listenOnLoopback } from './listen.ts'

interface ProtoType { decode: (bytes: Uint8Array) => unknown, toObject: (message: unknown, options: object) => unknown }
const root = createRequire(import.meta.url)('otlp-transformer-protos/build/src/generated/root.js') as {
  opentelemetry: { proto: { collector: { trace: { v1: { ExportTraceServiceRequest: ProtoType } } } } }
}
const ExportTraceServiceRequest = root.opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest

export interface ReceivedSpan {
  name: string
  traceId: string
  spanId: string
  parentSpanId: string
  /** OTLP's SpanKind: 1 internal, 2 server, 3 client. */
  kind: number
  attributes: Record<string, string | number | boolean>
  links: Array<{ traceId: string, spanId: string }>
  status: { code: number, message?: string }
  resource: Record<string, string | number | boolean>
  startNanos: bigint
}

interface AnyValue { stringValue?: string, intValue?: string | number, boolValue?: boolean, doubleValue?: number }
interface KeyValue { key: string, value: AnyValue }

function flat (attributes: KeyValue[] = []): Record<string, string | number | boolean> {
  return Object.fromEntries(attributes.map(({ key, value }) => [key, value.stringValue ?? (value.intValue !== undefined ? Number(value.intValue) : value.boolValue ?? value.doubleValue ?? '')]))
}

/** Protobuf ids are bytes (base64 in toObject), JSON ones hex. */
function hex (id: string | undefined, base64: boolean): string {
  if (id === undefined || id === '') return ''
  return base64 ? Buffer.from(id, 'base64').toString('hex') : id
}

interface ExportRequest {
  resourceSpans?: Array<{ resource?: { attributes?: KeyValue[] }, scopeSpans?: Array<{ spans?: Array<Record<string, unknown>> }> }>
}

function spansOf (request: ExportRequest, base64: boolean): ReceivedSpan[] {
  return (request.resourceSpans ?? []).flatMap(({ resource, scopeSpans = [] }) => scopeSpans.flatMap(({ spans = [] }) => spans.map((span) => ({
    name: span.name as string,
    traceId: hex(span.traceId as string, base64),
    spanId: hex(span.spanId as string, base64),
    parentSpanId: hex(span.parentSpanId as string | undefined, base64),
    kind: span.kind as number,
    attributes: flat(span.attributes as KeyValue[]),
    links: ((span.links ?? []) as Array<{ traceId: string, spanId: string }>).map((link) => ({ traceId: hex(link.traceId, base64), spanId: hex(link.spanId, base64) })),
    status: (span.status ?? { code: 0 }) as { code: number, message?: string },
    resource: flat(resource?.attributes),
    startNanos: BigInt(span.startTimeUnixNano as string)
  }))))
}

export interface OtlpReceiver {
  url: string
  spans: ReceivedSpan[]
  /** Every request body as received (protobuf or JSON bytes). */
  bodies: Buffer[]
  contentTypes: string[]
  /** Resolves once `predicate` holds for the spans received (polling; fails after `ms`). */
  waitFor: (predicate: (spans: ReceivedSpan[]) => boolean, ms?: number) => Promise<ReceivedSpan[]>
}

/** A receiver on a loopback port; `hang` takes requests and never answers (a hung collector). */
export async function startOtlpReceiver (t: Test, { hang = false }: { hang?: boolean } = {}): Promise<OtlpReceiver> {
  const spans: ReceivedSpan[] = []
  const bodies: Buffer[] = []
  const contentTypes: string[] = []
  const server = createServer((request: IncomingMessage, response: ServerResponse) => {
    const chunks: Buffer[] = []
    request.on('data', (chunk: Buffer) => chunks.push(chunk))
    request.on('end', () => {
      if (hang) return
      const body = Buffer.concat(chunks)
      bodies.push(body)
      const type = request.headers['content-type'] ?? ''
      contentTypes.push(type)
      if (type.startsWith('application/x-protobuf')) {
        const decoded = ExportTraceServiceRequest.toObject(ExportTraceServiceRequest.decode(body), { longs: String, bytes: String, defaults: false })
        spans.push(...spansOf(decoded as ExportRequest, true))
        response.writeHead(200, { 'content-type': 'application/x-protobuf' }).end()
      } else {
        spans.push(...spansOf(JSON.parse(body.toString('utf8')) as ExportRequest, false))
        response.writeHead(200, { 'content-type': 'application/json' }).end('{}')
      }
    })
  })
  const url = await listenOnLoopback(t, server)
  const waitFor = async (predicate: (received: ReceivedSpan[]) => boolean, ms = 10_000): Promise<ReceivedSpan[]> => {
    const until = Date.now() + ms
    while (!predicate(spans)) {
      if (Date.now() > until) throw new Error(`the spans awaited did not arrive; received: ${spans.map((span) => span.name).join(', ')}`)
      await new Promise((resolve) => setTimeout(resolve, 50))
    }
    return spans
  }
  return { url, spans, bodies, contentTypes, waitFor }
}
