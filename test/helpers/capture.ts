// Output streams for a command run in process (loadCommand, main) that keep what it wrote.
import type { LoadOutputs } from '../../gateway/commands/load.ts'

export interface Captured extends LoadOutputs {
  /** Everything written so far, per stream. */
  out: { stdout: string, stderr: string }
}

/** Streams that keep what was written; `isTTY` for the code that prints differently to a terminal. */
export function capture (isTTY = false): Captured {
  const out = { stdout: '', stderr: '' }
  return {
    out,
    stdout: { isTTY, write: (text: string) => { out.stdout += text } },
    stderr: { isTTY, write: (text: string) => { out.stderr += text } }
  }
}
