/**
 * How much of the event loop anonymous GraphQL executions from one client address may take
 * (issue 12). The per-request budget (src/graphql/result-budget.ts) bounds one execution;
 * without this, one client sending such requests back to back, a few at a time, would hold
 * the loop for all of them in a row, and every other request would wait behind them.
 *
 * Each address has an allowance of milliseconds that refills at `perSecondMs` a second, up
 * to `burstMs`. An execution starts only when the allowance holds a whole request's budget
 * (`reserveMs`, the anonymous time limit), which it takes at once; when it ends, what it did
 * not use comes back. So an address runs at most `burstMs / reserveMs` executions at once,
 * and over time uses at most `perSecondMs` of each second; past that it is answered
 * `too_many_requests` (429 with `Retry-After`) before anything runs. Cheap queries give
 * back almost all they took and are never refused in practice.
 *
 * Signed-in callers are not counted here: an account is someone to hold to account (and
 * sign-ups are limited per address), while the honest whole-tree reads of a signed-in user
 * (100,000 cards: seconds) would not fit such an allowance.
 */
import type { Plugin } from "graphql-yoga";
import { TooManyRequestsError } from "../shared/errors.js";
import type { GraphQLContext } from "./context.js";
import { refusal } from "./errors.js";

export interface AllowanceOptions {
  /** Milliseconds of execution one address regains per second. */
  perSecondMs: number;
  /** Most milliseconds one address may have saved up. */
  burstMs: number;
  /** What an execution takes when it starts: the most it may use. */
  reserveMs: number;
}

interface Account {
  /** Milliseconds left, as of `at`. */
  left: number;
  at: number;
}

/** Addresses remembered before those with a full allowance (nothing owed) are forgotten. */
const SWEEP_AT = 10_000;

export class ExecutionAllowance {
  private readonly accounts = new Map<string, Account>();

  constructor(
    private readonly options: AllowanceOptions,
    private readonly now: () => number = () => performance.now(),
  ) {}

  /**
   * Takes `reserveMs` from `address`'s allowance for an execution about to start.
   * @throws TooManyRequestsError when the allowance holds less, with the seconds until it will.
   */
  take(address: string): void {
    const account = this.refilled(address);
    const { reserveMs, perSecondMs } = this.options;
    if (account.left < reserveMs) {
      const seconds = Math.max(1, Math.ceil((reserveMs - account.left) / perSecondMs));
      throw new TooManyRequestsError(
        `Anonymous GraphQL requests from this address have used their share of the server's time (${perSecondMs} ms a second); ` +
          `try again in ${seconds} s, or sign in.`,
        seconds,
      );
    }
    account.left -= reserveMs;
    this.accounts.set(address, account);
    if (this.accounts.size > SWEEP_AT) this.sweep();
  }

  /** Gives back what an execution that took `reserveMs` did not use (`usedMs`), or takes what it used past it. */
  settle(address: string, usedMs: number): void {
    const account = this.refilled(address);
    account.left = Math.min(this.options.burstMs, account.left + this.options.reserveMs - usedMs);
    this.accounts.set(address, account);
  }

  private refilled(address: string): Account {
    const now = this.now();
    const account = this.accounts.get(address) ?? { left: this.options.burstMs, at: now };
    account.left = Math.min(this.options.burstMs, account.left + ((now - account.at) * this.options.perSecondMs) / 1000);
    account.at = now;
    return account;
  }

  /** Forgets the addresses whose allowance is full again: they owe nothing. */
  private sweep(): void {
    for (const address of [...this.accounts.keys()]) {
      if (this.refilled(address).left >= this.options.burstMs) this.accounts.delete(address);
    }
  }
}

/**
 * Takes from the allowance of an anonymous caller's address before its execution runs
 * (after the static limits, so a refused document costs nothing), and settles after with
 * the time its budget counted.
 */
export function executionAllowancePlugin(allowance: ExecutionAllowance): Plugin<GraphQLContext> {
  return {
    onExecute: ({ args, setResultAndStopExecution }) => {
      const { anonymousAddress: address, budget } = args.contextValue;
      if (address === null) return;
      try {
        allowance.take(address);
      } catch (error) {
        if (!(error instanceof TooManyRequestsError)) throw error;
        setResultAndStopExecution({ errors: [refusal(error, 429, { "Retry-After": String(error.retryAfterSeconds) })] });
        return;
      }
      return { onExecuteDone: () => allowance.settle(address, budget.usedMs) };
    },
  };
}
