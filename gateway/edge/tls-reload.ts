// Reading the certificates again, at a config reload (SIGHUP, POST /admin/reload: assembly/build-gateway.ts registers it).
import type { FastifyInstance } from 'fastify'
import type { TlsFiles } from '../config/edge-settings.ts'
import type { TlsCertificates, TlsLabels, TlsReload } from './tls.ts'

declare module 'fastify' {
  interface FastifyInstance {
    /**
     * Reads the TLS files again (`files`: a new list from a reloaded config, with `labels` naming
     * its fields): new handshakes get the new certificates, open connections keep theirs. A pair
     * that cannot be read or whose key does not match keeps its old certificate, logged at error.
     * Without TLS, nothing to do. Never rejects.
     */
    reloadTls: (files?: TlsFiles[], labels?: TlsLabels[]) => Promise<TlsReload>
  }
}

export function registerTlsReload (app: FastifyInstance, certificates: TlsCertificates | undefined): void {
  app.decorate('reloadTls', async function reloadTls (files?: TlsFiles[], labels?: TlsLabels[]): Promise<TlsReload> {
    if (certificates === undefined) return { renewed: [], kept: [] }
    const result = await certificates.reload(files, labels)
    for (const { cert, reason } of result.kept) app.log.error({ cert, reason }, 'tls certificate not renewed: the old one stays')
    if (result.renewed.length > 0) app.log.info({ renewed: result.renewed }, 'tls certificates reloaded')
    return result
  })
}
