import { mkdir, writeFile } from 'node:fs/promises'

export interface ResultFiles {
  /** The run's own files: `<name>.json` and `<name>.svg`. */
  name: string
  /** A full run's files are also `<latest>.json`, `.svg` and `.md` (its table); a quick run's are not. */
  latest: string
  quick: boolean
  report: unknown
  svg: string
  table: () => string
}

/** Writes a run's report, chart and (a full run) its latest copies into `directory`; resolves to the JSON's path. */
export async function writeResultFiles (directory: URL, { name, latest, quick, report, svg, table }: ResultFiles): Promise<string> {
  await mkdir(directory, { recursive: true })
  const json = `${JSON.stringify(report, null, 2)}\n`
  await writeFile(new URL(`${name}.json`, directory), json)
  await writeFile(new URL(`${name}.svg`, directory), svg)
  if (!quick) {
    await writeFile(new URL(`${latest}.json`, directory), json)
    await writeFile(new URL(`${latest}.svg`, directory), svg)
    await writeFile(new URL(`${latest}.md`, directory), `${table()}\n`)
  }
  return new URL(`${name}.json`, directory).pathname
}
