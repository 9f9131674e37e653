/**
 * What one request may make the server resolve, counted while it executes. The static
 * limits (src/graphql/operation-limits.ts, answer-bound.ts) bound an answer against the
 * trees it reads, but cannot know how big those are: three lists of a 10,000-card tree are
 * within them. Every resolver that hands out cards, trees or collaborators counts them here,
 * each as many values as fields are selected on it (so 30 aliases of `id` count 30), and
 * `content` counts its characters; the first count past a limit stops the request with
 * `payload_too_large`. Everything is counted by one method, `charge`, which the lists
 * written without resolvers (card-lists.ts) call too: one point of charge for both paths. The unit is what an execution's
 * time and memory grow with: graphql-js resolves and stores every selected field of every
 * record.
 *
 * Each count also reads the clock (issue 12: an anonymous query within its values still
 * held every other request for one to two seconds). A request whose execution has used
 * more of the event loop than `timeMs` is stopped the same way, `payload_too_large` (not
 * `too_many_requests`: the same request would run as long again; it has to ask for less).
 * The check throws from a resolver, which is what interrupts graphql-js: a list resolved
 * synchronously never yields, so nothing else could. Callers who are not signed in get
 * smaller budgets (`anonymous` in src/config.ts), and what their executions take is also
 * counted per client address over time (src/graphql/execution-allowance.ts).
 *
 * Handing values back on a later turn of the event loop instead (a promise once execution
 * has held the loop for 20 ms) was tried and is worse: graphql-js goes on with every
 * sibling, so the pending frontier multiplies at each turn, and resuming it all is one long
 * run of microtasks (the 200-byte probe: 2-5 s, /healthz held 1.3-2.3 s, against 0.2-0.3 s
 * run to the budget in one go).
 *
 * Once spent, a nullable field answers null without another error (`spent`), and a
 * non-null one throws again, which graphql-js propagates up, abandoning the lists above
 * it; so what is left of the execution finishes at once. `resultBudgetPlugin` then
 * answers the one error (src/graphql/yoga.ts).
 */
import { getOperationAST, type ExecutionResult, type FieldNode, type GraphQLResolveInfo } from "graphql";
import { isAsyncIterable, type Plugin } from "graphql-yoga";
import type { GraphQLLimits } from "../config.js";
import { PayloadTooLargeError } from "../shared/errors.js";
import type { GraphQLContext } from "./context.js";
import { selectionWidth } from "./selections.js";

/** Fields selected on each record a field returns, by its (parsed, cached) field node. */
const widths = new WeakMap<FieldNode, number>();

function widthOf(info: GraphQLResolveInfo): number {
  const node = info.fieldNodes[0]!;
  let width = widths.get(node);
  if (width === undefined) {
    const spread = new Set<string>();
    width = Math.max(1, info.fieldNodes.reduce((sum, field) => sum + selectionWidth(field.selectionSet, info.fragments, spread), 0));
    widths.set(node, width);
  }
  return width;
}

/**
 * The event loop's runs as GraphQL execution sees them: a run starts at the first count
 * after the loop turned, and ends when an immediate queued at its start fires (the loop's
 * check phase). A request's time is what passes between its counts within one run; the
 * waits in between (the store, other requests' turns) are not its own.
 */
class EventLoopRuns {
  private started = false;
  private run = 0;

  /** The current run, started now if none is under way. */
  current(): number {
    if (!this.started) {
      this.started = true;
      this.run += 1;
      setImmediate(() => (this.started = false));
    }
    return this.run;
  }
}

const runs = new EventLoopRuns();

export interface BudgetLimits {
  values: number;
  text: number;
  timeMs: number;
  /** Said after the message of a spent budget. */
  hint?: string;
}

/** The budget for a caller: smaller when anonymous (anyone can send such a request, any number of times). */
export function budgetLimits(limits: GraphQLLimits, signedIn: boolean): BudgetLimits {
  if (signedIn) return { values: limits.values, text: limits.text, timeMs: limits.timeMs };
  return { values: limits.anonymous.values, text: limits.text, timeMs: limits.anonymous.timeMs, hint: " Signed-in callers may ask for more." };
}

export class ResultBudget {
  private values = 0;
  private characters = 0;
  /** Event-loop time used so far: between counts of the same run (`EventLoopRuns`). */
  private spentMs = 0;
  private lastRun = -1;
  private lastAt = 0;
  /** `spentMs` when the current run began, and the process's CPU time then (read once per run). */
  private spentBeforeRun = 0;
  private runCpu: NodeJS.CpuUsage | null = null;
  /** The error that ended the request, once the budget is spent. */
  error: PayloadTooLargeError | null = null;

  constructor(private readonly limits: BudgetLimits) {}

  get spent(): boolean {
    return this.error !== null;
  }

  /** Milliseconds of the event loop the execution has used so far, as its counts saw them. */
  get usedMs(): number {
    return this.spentMs;
  }

  /** A fresh budget: for each event of a subscription, which is resolved like one request. */
  reset(): void {
    this.values = 0;
    this.characters = 0;
    this.spentMs = 0;
    this.lastRun = -1;
    this.error = null;
  }

  /**
   * Counts `list` (cards, trees, collaborators the field `info` is about to return) and returns it.
   * @throws PayloadTooLargeError once the request has resolved more than its limit, or run longer.
   */
  list<T>(list: T[], info: GraphQLResolveInfo): T[] {
    this.charge(list.length * widthOf(info), 0);
    return list;
  }

  /** Counts one record, for a field that returns one. @throws as `list` does. */
  one<T>(record: T, info: GraphQLResolveInfo): T {
    this.charge(widthOf(info), 0);
    return record;
  }

  /** Counts the characters of `text` (card content) and returns it. @throws as `list` does. */
  text(text: string): string {
    this.charge(0, text.length);
    return text;
  }

  /** Whether `values` more values and `characters` more characters of text stay within the limits; counts nothing. */
  fits(values: number, characters: number): boolean {
    return this.values + values <= this.limits.values && this.characters + characters <= this.limits.text;
  }

  /**
   * The one point where everything an answer holds is counted, whichever way it is written:
   * by the resolvers (`list`, `one`, `text`) or as bytes without them (src/graphql/card-lists.ts,
   * a whole list at once when it `fits`, else card by card). `values`: records × the fields
   * selected on each; `characters`: card text.
   * @throws as `list` does.
   */
  charge(values: number, characters: number): void {
    this.values += values;
    this.characters += characters;
    // Only what this charge adds can pass a limit here: once a request is over one, its
    // other fields go on (and answer null) until one that charges the same thing throws,
    // as graphql-js would have met them.
    if (values > 0 && this.values > this.limits.values) {
      this.fail(
        `This request resolves more than ${this.limits.values} values (each field of each card, tree or collaborator); ` +
          "ask for less at once. A tree's flat `cards` list (with `depth` and `parentId`) reads each card once; " +
          "`parent` and `children` nested in each other read the same cards again and again." +
          (this.limits.hint ?? ""),
      );
    }
    if (characters > 0 && this.characters > this.limits.text) {
      this.fail(`This request asks for more than ${this.limits.text} characters of card text; ask for less at once.`);
    }
    this.tick();
  }

  /** Reads the clock: the request's own time on the event loop. @throws as `list` does. */
  private tick(): void {
    const now = performance.now();
    const run = runs.current();
    if (run === this.lastRun) this.spentMs += now - this.lastAt;
    else {
      this.spentBeforeRun = this.spentMs;
      this.runCpu = process.cpuUsage();
    }
    this.lastRun = run;
    this.lastAt = now;
    if (this.spentMs > this.limits.timeMs && this.ownMs() > this.limits.timeMs) {
      this.fail(
        `This request ran longer than ${this.limits.timeMs} ms of the server's time; ask for less at once.` +
          " A tree's flat `cards` list (with `depth` and `parentId`) reads each card once." +
          (this.limits.hint ?? ""),
      );
    }
  }

  /**
   * The time counted, less what the process spent waiting for a core in the current run: on
   * a busy host (two cores shared with other processes, as in CI) the wall clock ran on while
   * another process had the core, and an honest 2,000-card read went past the anonymous
   * 100 ms. So once the clock says the limit is passed, the run's part is taken as the
   * process's CPU time over it instead. That CPU time is the whole process's (the pool's and
   * workers' threads too): never less than this request's own, so nothing is forgiven that
   * the request spent (more than the clock's, it only stops the request, as the clock
   * would have). Earlier runs stay as the clock counted them. One `process.cpuUsage()` a run
   * (about 0.7 µs), and one a count only while the clock is past the limit and this is not.
   */
  private ownMs(): number {
    const cpu = process.cpuUsage(this.runCpu ?? undefined);
    return this.spentBeforeRun + (cpu.user + cpu.system) / 1000;
  }

  private fail(message: string): never {
    this.error ??= new PayloadTooLargeError(message);
    throw this.error;
  }
}

/**
 * Replaces the result of a request whose budget ran out with its one error (without the
 * errors of the fields abandoned after it). A query's data is dropped: it is cut short
 * where the budget ran out. A mutation's data is kept, since its writes happened.
 */
export const resultBudgetPlugin: Plugin<GraphQLContext> = {
  // A subscription resolves each event with the one request context: each event gets the
  // whole budget afresh, or a long-lived stream would run out of it.
  onSubscribe: ({ args }) => ({
    onSubscribeResult: ({ result, setResult }) => {
      if (!isAsyncIterable(result)) return;
      const budget = args.contextValue.budget;
      const source = result[Symbol.asyncIterator]();
      const events: AsyncIterableIterator<ExecutionResult> = {
        next: () => {
          budget.reset();
          return source.next();
        },
        return: () => source.return?.() ?? Promise.resolve({ done: true, value: undefined }),
        [Symbol.asyncIterator]() {
          return events;
        },
      };
      setResult(events);
    },
  }),
  onExecute: ({ args }) => ({
    onExecuteDone: ({ result, setResult }) => {
      const budgetError = args.contextValue.budget.error;
      if (!budgetError || isAsyncIterable(result)) return;
      const first = result.errors?.find((error) => error.originalError === budgetError);
      if (!first) return;
      const mutation = getOperationAST(args.document, args.operationName)?.operation === "mutation";
      setResult({ data: mutation ? result.data : null, errors: [first] });
    },
  }),
};
