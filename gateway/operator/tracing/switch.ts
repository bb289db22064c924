// Whether tracing is on, decided from the environment before anything of OpenTelemetry is loaded:
// off, this file is all of tracing the process ever reads (sdk.ts is imported only when on).
import type { GatewayTracing } from './gateway-tracing.ts'

const EXPORTERS = ['otlp', 'console', 'none']

function set (value: string | undefined): boolean {
  return value !== undefined && value.trim() !== ''
}

function exportersOf (env: NodeJS.ProcessEnv): string[] {
  return (env.OTEL_TRACES_EXPORTER ?? '').split(',').map((name) => name.trim()).filter((name) => name !== '')
}

/**
 * On when `OTEL_TRACES_EXPORTER` names an exporter or an OTLP endpoint is set (the SDK would
 * default to `otlp` without either: macgate does not), and `OTEL_SDK_DISABLED` is not true.
 */
export function tracingWanted (env: NodeJS.ProcessEnv): boolean {
  if (env.OTEL_SDK_DISABLED?.trim().toLowerCase() === 'true') return false
  const exporters = exportersOf(env)
  if (exporters.length > 0) return !exporters.includes('none')
  return set(env.OTEL_EXPORTER_OTLP_ENDPOINT) || set(env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT)
}

/** What an operator must fix before tracing can start, or undefined. */
export function tracingRefusal (env: NodeJS.ProcessEnv): string | undefined {
  const unknown = exportersOf(env).filter((name) => !EXPORTERS.includes(name))
  if (unknown.length > 0) return `OTEL_TRACES_EXPORTER=${env.OTEL_TRACES_EXPORTER}: macgate exports traces with ${EXPORTERS.join(', ')} only (not ${unknown.join(', ')})`
  const name = set(env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL) ? 'OTEL_EXPORTER_OTLP_TRACES_PROTOCOL' : 'OTEL_EXPORTER_OTLP_PROTOCOL'
  const protocol = env[name]?.trim() ?? 'http/protobuf'
  if (protocol === '' || protocol === 'http/protobuf' || protocol === 'http/json') return undefined
  if (protocol === 'grpc') return `${name}=grpc is not supported: macgate sends traces over OTLP/HTTP; use http/protobuf (a collector's port 4318) or http/json`
  return `${name}=${protocol}: use http/protobuf (the default) or http/json`
}

/** The SDK started and the gateway's tracing made, when the environment asks for it; undefined otherwise. */
export async function startTracing (env: NodeJS.ProcessEnv): Promise<GatewayTracing | undefined> {
  if (!tracingWanted(env)) return undefined
  const { startSdk } = await import('./sdk.ts')
  return startSdk()
}
