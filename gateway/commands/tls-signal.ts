// SIGHUP reads the TLS files again (a renewed certificate, as certbot's deploy hook or cert-manager
// leaves it): its own small listener, beside whatever else a SIGHUP reloads.
import type { FastifyInstance } from 'fastify'

/** Until the gateway closes, each SIGHUP renews the certificates (app.reloadTls logs the outcome). */
export function reloadTlsOnSighup (app: FastifyInstance): void {
  const onHangup = (): void => { void app.reloadTls() }
  process.on('SIGHUP', onHangup)
  app.addHook('onClose', async () => { process.off('SIGHUP', onHangup) })
}
