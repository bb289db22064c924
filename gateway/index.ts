// The package's `macgate/gateway` entry: the service (buildGateway) and what an operator's own
// program builds around it (config, store, TLS, reload, drain, admin listener, logs, tracing), and
// the load tester. Everything else in gateway/ is the service's own.
export { buildGateway, logSerializers, type GatewayOptions } from './assembly/build-gateway.ts'
export { openStore } from './assembly/stores.ts'
export { tuneHeapForServing } from './assembly/heap-tuning.ts'
export { parseConfig, loadConfig, ConfigError, sampleRoutes, type GatewayConfig, type RouteRule } from './config/gateway-config.ts'
export type { TlsFiles, Http2Settings, HstsSettings } from './config/edge-settings.ts'
export { TlsCertificates, TlsFileError, configLabels, type TlsLabels, type TlsReload } from './edge/tls.ts'
export { fromTrustedProxy, trustedProxies, type TrustCheck } from './edge/trusted-proxies.ts'
export { drainAndClose, type DrainTimes } from './edge/drain.ts'
export { UPSTREAM_POOL } from './open-api/upstreams/upstream.ts'
export { ConfigReload, type PartOutcome, type ReloadAnswer, type Reloader } from './operator/reload.ts'
export { buildAdminServer, withProcessMetrics, type AdminServerOptions } from './operator/admin-listener.ts'
export { logDestination } from './operator/log-destination.ts'
export { startTracing, tracingRefusal, tracingWanted } from './operator/tracing/switch.ts'
export type { GatewayTracing } from './operator/tracing/gateway-tracing.ts'
export type { DemoClient } from './site/demo/routes.ts'
export { runLoad, signed, signedRequests, roundRobin, zipf, type Credentials, type LoadOptions, type LoadResult, type SetupRequest } from './load/index.ts'
