// The OpenTelemetry Node SDK, configured by the standard OTEL_* variables as the SDK reads them;
// loaded only when tracing is on (switch.ts). The span processor is built here rather than by the
// SDK, so that what it loses is counted (dropped-spans.ts); everything else is the SDK's own.
import { getNumberFromEnv, getStringFromEnv } from '@opentelemetry/core'
import { OTLPTraceExporter as JsonExporter } from '@opentelemetry/exporter-trace-otlp-http'
import { OTLPTraceExporter as ProtobufExporter } from '@opentelemetry/exporter-trace-otlp-proto'
import { defaultResource, resourceFromAttributes } from '@opentelemetry/resources'
import { NodeSDK } from '@opentelemetry/sdk-node'
import { BatchSpanProcessor, ConsoleSpanExporter, SimpleSpanProcessor, type SpanExporter, type SpanProcessor } from '@opentelemetry/sdk-trace'
import { DroppedSpans } from './dropped-spans.ts'
import { GatewayTracing } from './gateway-tracing.ts'
import { samplerFromEnv, Sampling } from './sampling.ts'

function otlpExporter (): SpanExporter {
  const protocol = getStringFromEnv('OTEL_EXPORTER_OTLP_TRACES_PROTOCOL') ?? getStringFromEnv('OTEL_EXPORTER_OTLP_PROTOCOL') ?? 'http/protobuf'
  // Each reads its endpoint, headers, certificate, compression and timeout from the environment.
  return protocol === 'http/json' ? new JsonExporter() : new ProtobufExporter()
}

/**
 * `OTEL_TRACES_EXPORTER` (default `otlp`): each exporter behind a batch processor, whose queue
 * (`OTEL_BSP_MAX_QUEUE_SIZE`, default 2048) drops spans when full, so that a hung collector never
 * holds a request; `console` writes each span at once (for trying things out).
 */
function spanProcessors (dropped: DroppedSpans): SpanProcessor[] {
  const names = (getStringFromEnv('OTEL_TRACES_EXPORTER') ?? 'otlp').split(',').map((name) => name.trim()).filter((name) => name !== '' && name !== 'none')
  const selfObsMeterProvider = dropped.meterProvider()
  return [...new Set(names.length === 0 ? ['otlp'] : names)].map((name) => name === 'console'
    ? new SimpleSpanProcessor({ exporter: new ConsoleSpanExporter() })
    : new BatchSpanProcessor({
      exporter: otlpExporter(),
      selfObsMeterProvider,
      maxQueueSize: getNumberFromEnv('OTEL_BSP_MAX_QUEUE_SIZE'),
      maxExportBatchSize: getNumberFromEnv('OTEL_BSP_MAX_EXPORT_BATCH_SIZE'),
      scheduledDelayMillis: getNumberFromEnv('OTEL_BSP_SCHEDULE_DELAY'),
      exportTimeoutMillis: getNumberFromEnv('OTEL_BSP_EXPORT_TIMEOUT')
    }))
}

/**
 * Starts the SDK: the sampler (`OTEL_TRACES_SAMPLER`, default parentbased_always_on; built here
 * and asked before any span is made, sampling.ts), the
 * propagators (`OTEL_PROPAGATORS`, default tracecontext and baggage), the resource
 * (`OTEL_RESOURCE_ATTRIBUTES`, `OTEL_SERVICE_NAME`, else `macgate`; a `service.instance.id` of its
 * own per process, so each worker of `--workers` is told apart) and the async context. No metrics
 * or logs go to the collector: macgate's metrics are Prometheus's, its logs are lines.
 */
export function startSdk (): GatewayTracing {
  const dropped = new DroppedSpans()
  const sampling = new Sampling(samplerFromEnv())
  const sdk = new NodeSDK({
    sampler: sampling.sampler,
    idGenerator: sampling,
    resource: defaultResource().merge(resourceFromAttributes({ 'service.name': 'macgate' })),
    spanProcessors: spanProcessors(dropped),
    metricReaders: [],
    logRecordProcessors: [],
    instrumentations: []
  })
  sdk.start()
  return new GatewayTracing(dropped, sampling, async () => await sdk.shutdown())
}
