// What a scenario must reach. Each scenario carries its goals (bench/run.ts); the targets table
// and the chart both read them from there, and the comparison and its text come from here, once.
import { BASELINE_ID, type ScenarioResult, type TargetResult } from './report.ts'

export type Comparison = '≥' | '≤' | '<'

const HOLDS: Record<Comparison, (value: number, limit: number) => boolean> = {
  '≥': (value, limit) => value >= limit,
  '≤': (value, limit) => value <= limit,
  '<': (value, limit) => value < limit
}

/** Every scenario's result by id, for goals relative to another scenario. */
export type Results = ReadonlyMap<string, ScenarioResult>

/** Best throughput ÷ the baseline's best, at least `limit`: the goal drawn on the scenario's bar of the chart. */
export interface RatioGoal {
  kind: 'ratio'
  /** What is checked; the table adds which scenarios are divided. */
  name: string
  limit: number
}

/** Any other value read from the results, with its bound. */
export interface ValueGoal {
  kind: 'value'
  name: string
  comparison: Comparison
  limit: number
  measure: (own: ScenarioResult, results: Results) => number
}

export type Goal = RatioGoal | ValueGoal

export function ratioGoal (name: string, limit: number): RatioGoal {
  return { kind: 'ratio', name, limit }
}

export function valueGoal (name: string, comparison: Comparison, limit: number, measure: ValueGoal['measure']): ValueGoal {
  return { kind: 'value', name, comparison, limit, measure }
}

/** A scenario's result that a goal refers to; a missing one is a mistake in the definitions. */
export function resultOf (results: Results, id: string): ScenarioResult {
  const result = results.get(id)
  if (result === undefined) throw new Error(`no result for scenario ${id}`)
  return result
}

function ratioOf (own: ScenarioResult): number {
  if (own.bestRatio === undefined) throw new Error(`scenario ${own.id} has a ratio goal but no ratio`)
  return own.bestRatio
}

/** One row of the targets table: `own` is the result of the scenario that carries the goal. */
export function assess (goal: Goal, own: ScenarioResult, results: Results): TargetResult {
  const { name, comparison, value } = goal.kind === 'ratio'
    ? { name: `${goal.name}, best req/s (${own.id} ÷ ${BASELINE_ID})`, comparison: '≥' as const, value: ratioOf(own) }
    : { name: goal.name, comparison: goal.comparison, value: goal.measure(own, results) }
  return { name, goal: `${comparison} ${goal.limit}`, value, met: HOLDS[comparison](value, goal.limit) }
}

/** The ratio goals by scenario id, as the chart marks them. */
export function chartGoals (scenarios: Array<{ id: string, goals?: Goal[] }>): Map<string, number> {
  return new Map(scenarios.flatMap(({ id, goals = [] }) => goals.flatMap((goal) => goal.kind === 'ratio' ? [[id, goal.limit] as const] : [])))
}
