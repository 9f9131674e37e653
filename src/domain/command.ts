/**
 * Use cases as commands (issue 13): each write the service offers is one object with its
 * name, the input schema its body must satisfy, the policy action (SPEC §3) it is checked
 * against, and a typed `run`. The transports and the CLI do not re-implement any of it:
 *
 * - REST and the CLI hand the raw body to `execute`, which parses it once with the
 *   command's schema (a ValidationError listing each problem otherwise) and runs it;
 * - GraphQL's validation plugin has already parsed the mutation's input argument with the
 *   very same schema (src/graphql/inputs.ts), so a resolver calls `run` with it directly.
 *
 * The command's `target` is what names the thing acted on (a tree's and a card's id, an
 * expected version): it comes from the path or the arguments, not from the body, and `run`
 * checks its syntax. For tree commands the target's tree is loaded, locked when the command
 * writes, and authorised with the declared action by `treeCommand`; every other command
 * (accounts, scripts, preferences, creating and cloning trees) is checked by `command`
 * against the subject it declares how to load. Either way the action a command declares is
 * the one the policy checks before `run` (deny by default: no `run` has to remember to
 * authorise); test/domain/commands.test.ts holds every command to the SPEC §3 matrix and
 * the account rules through that declaration.
 *
 * A command also declares what it `needs` of the domain context (src/domain/context.ts):
 * its `run` (and `precheck`, `subject`) is typed with those members only (`Ports<...>`), so
 * a command's definition says which ports it touches, and reaching for another is a type
 * error. The wrappers add what they use themselves (`config` for the policy; the store, the
 * tree locks and the races for a tree command) to the command's declared `needs`.
 */
import type { z } from "zod";
import { parseInput } from "../shared/schemas.js";
import type { Change } from "../shared/changes.js";
import type { Tree } from "../shared/records.js";
import type { DomainContext, Ports } from "./context.js";
import { ConflictError, ForbiddenError, UnauthenticatedError } from "../shared/errors.js";
import { noteCommitted } from "./commit-observer.js";
import { commandStep, treeTheStepRemoved } from "./idempotency.js";
import { authorizeOperator, authorizeOwnAccount, authorizeScript, authorizeTree, maySignUp, type Actor, type TreeAction } from "./policy.js";
import { loadTree, withTree } from "./tree-access.js";

/**
 * What the policy checks before a command runs: a tree action of SPEC §3, or one of the
 * account rules (`signUp`: anyone while sign-up is open, else the operator; `ownAccount`:
 * the user or the operator; `ownScript`: the script's owner alone; `operator`: the CLI's
 * system actor alone; `signedIn`: any signed-in user, for what creates their own things;
 * the operator owns nothing, so not the system actor).
 */
export type PolicyAction = TreeAction | "signUp" | "ownAccount" | "ownScript" | "operator" | "signedIn";

export interface Command<Target, Schema extends z.ZodType, Output, A extends Actor | null = Actor, K extends keyof DomainContext = keyof DomainContext> {
  readonly name: string;
  /** The body's schema; `execute` parses with it, GraphQL's validation plugin too. */
  readonly input: Schema;
  /** The action the policy checks, or how it follows from the input (renaming vs publishing). */
  readonly action: PolicyAction | ((input: z.output<Schema>, target: Target, actor: A) => PolicyAction);
  /** The members of the domain context `run` reads, the policy's included: all a caller must hand it. */
  readonly needs: readonly K[];
  run(ctx: Ports<K>, actor: A, target: Target, input: z.output<Schema>): Promise<Output>;
}

/** What `command` itself reads, whatever the command: the policy's sign-up setting. */
type CommandNeeds = "config";
/** What `treeCommand` itself reads: the tree, its write lock and its races with other processes. */
type TreeCommandNeeds = "store" | "treeLocks" | "treeRaces";

/** `needs` with the wrapper's own, once each, in a stable order. */
function allNeeds<K extends keyof DomainContext>(declared: readonly K[], own: readonly K[]): readonly K[] {
  return Object.freeze([...new Set([...own, ...declared])].sort());
}

/**
 * What a command's action is checked on, loaded from its target (and input) before `run`:
 * a tree for a tree action (clonePublic finds it by id or public address), the script for
 * `ownScript`, the id of the account for `ownAccount`. Null when the thing does not exist
 * (the policy answers not found). `signUp`, `operator` and `signedIn` need none.
 */
export type Subject = Tree | { userId: string } | string | null;

/** The actions decided from who acts alone, with no subject. */
const ACTOR_ONLY_ACTIONS = new Set<PolicyAction>(["signUp", "operator", "signedIn"]);

/**
 * Declares a command that is refused unless its declared action is allowed (deny by
 * default): before `run`, the action is checked against the actor and, for actions on
 * something, against the `subject` the definition loads. `run` receives that subject; it
 * never has to remember to authorise. A definition whose action needs a subject but that
 * loads none is refused here, when its module loads.
 */
export function command<
  Target,
  Schema extends z.ZodType,
  Output,
  A extends Actor | null = Actor,
  S extends Subject = never,
  K extends keyof DomainContext = never,
>(definition: {
  name: string;
  input: Schema;
  action: PolicyAction | ((input: z.output<Schema>, target: Target, actor: A) => PolicyAction);
  /** The members of the domain context `precheck`, `subject` and `run` read. */
  needs: readonly K[];
  /** Checks that need nothing loaded (ids' syntax), made before the subject is loaded. */
  precheck?(ctx: Ports<K>, target: Target, input: z.output<Schema>): void;
  /** Loads what the action is checked on; required unless every action it may declare is actor-only. */
  subject?(ctx: Ports<K>, target: Target, input: z.output<Schema>): S | Promise<S>;
  run(ctx: Ports<K>, actor: A, target: Target, input: z.output<Schema>, subject: S): Promise<Output>;
  /**
   * What `run` returned when it committed `change` (a keyed retry after a crash answers it
   * again). Declared only by a command that writes through `commitChange` alone: its key may
   * then be claimed with its change (idempotency.ts, `commandStep`).
   */
  replay?(ctx: Ports<K>, change: Change): Output | Promise<Output>;
}): Command<Target, Schema, Output, A, K | CommandNeeds> {
  const { run, subject, precheck, needs, replay, ...rest } = definition;
  if (typeof rest.action === "string" && !ACTOR_ONLY_ACTIONS.has(rest.action) && !subject) {
    throw new Error(`Command ${rest.name} declares "${rest.action}" but loads nothing to check it on.`);
  }
  const self: Command<Target, Schema, Output, A, K | CommandNeeds> = {
    ...rest,
    needs: allNeeds<K | CommandNeeds>(needs, ["config"]),
    run: (ctx, actor, target, input) =>
      // A command that can rebuild its answer from its change writes through the change log alone.
      commandStep((committed) => (committed ? replayed(rest.name, ctx, committed, replay) : checkedRun(ctx, actor, target, input)), replay !== undefined),
  };
  async function checkedRun(ctx: Ports<K | CommandNeeds>, actor: A, target: Target, input: z.output<Schema>): Promise<Output> {
    const action = actionOf(self, input, target, actor);
    if (ACTOR_ONLY_ACTIONS.has(action)) {
      authorizeAction(ctx, actor, action, null);
      precheck?.(ctx, target, input);
      return run(ctx, actor, target, input, null as unknown as S);
    }
    if (!subject) throw new Error(`Command ${rest.name} declares "${action}" but loads nothing to check it on.`);
    precheck?.(ctx, target, input);
    const loaded = await subject(ctx, target, input);
    authorizeAction(ctx, actor, action, loaded);
    return run(ctx, actor, target, input, loaded);
  }
  return Object.freeze(self);
}

/**
 * A step of a keyed request that committed `change` in a run that died before its answer
 * was kept: the request was done, so nothing runs; the command answers what it answered
 * then, rebuilt from the change, and the change is reported as the request's own (its
 * revision as `X-Tree-Revision`). A command that cannot rebuild its answer says it was done.
 */
async function replayed<K extends keyof DomainContext, Output>(
  name: string,
  ctx: Ports<K>,
  change: Change,
  replay: ((ctx: Ports<K>, change: Change) => Output | Promise<Output>) | undefined,
): Promise<Output> {
  noteCommitted(change);
  if (replay) return replay(ctx, change);
  throw new ConflictError(
    `This request was done already (${name}, revision ${change.revision} of its tree), and its answer was lost when the server stopped; it is not run again.`,
  );
}

/**
 * The one check of a command's action: the policy's rule for it, on `subject`.
 * @throws UnauthenticatedError, ForbiddenError or NotFoundError as the policy decides.
 */
function authorizeAction(ctx: Ports<CommandNeeds>, actor: Actor | null, action: PolicyAction, subject: Subject): void {
  switch (action) {
    case "signUp":
      if (!maySignUp(actor, ctx.config.signup)) throw new ForbiddenError("Sign-up is closed on this server.");
      return;
    case "operator":
      return authorizeOperator(actor);
    case "signedIn":
      if (actor === null) throw new UnauthenticatedError();
      if (actor.system) throw new ForbiddenError("The operator owns nothing; act as a user.");
      return;
    case "ownAccount":
      return authorizeOwnAccount(actor, typeof subject === "string" ? subject : "");
    case "ownScript":
      authorizeScript(actor, subject !== null && typeof subject === "object" && "userId" in subject ? subject : null);
      return;
    default:
      authorizeTree(actor, action, subject !== null && typeof subject === "object" && "owner" in subject ? subject : null);
  }
}

/** The action a command is checked against for this input. */
export function actionOf<Target, Schema extends z.ZodType, A extends Actor | null, K extends keyof DomainContext>(
  cmd: Command<Target, Schema, unknown, A, K>,
  input: z.output<Schema>,
  target: Target,
  actor: A,
): PolicyAction {
  return typeof cmd.action === "function" ? cmd.action(input, target, actor) : cmd.action;
}

/**
 * A command on one tree: `run` receives the tree loaded and authorised with the declared
 * action, under the tree's write lock unless `reads` (a command that only reads the tree,
 * like a clone, does not hold up its writers). A writing command's `prefetch` reads what
 * `run` needs besides the tree at the same time as the tree, under the lock (withTree).
 */
export function treeCommand<
  Target extends { treeId: string },
  Schema extends z.ZodType,
  Output,
  K extends keyof DomainContext = never,
  P = undefined,
>(definition: {
  name: string;
  input: Schema;
  action: TreeAction | ((input: z.output<Schema>, target: Target, actor: Actor) => TreeAction);
  reads?: true;
  /** The members of the domain context `precheck` and `run` read (the tree's loading and locking aside). */
  needs: readonly K[];
  /** Checks that need no tree (ids' syntax, sizes), made before the tree is loaded or locked. */
  precheck?(ctx: Ports<K>, target: Target, input: z.output<Schema>): void;
  /** Store reads `run` needs besides the tree, made beside its loading in each attempt (not for `reads` commands). */
  prefetch?(ctx: Ports<K>, actor: Actor, target: Target, input: z.output<Schema>): Promise<P>;
  run(ctx: Ports<K>, actor: Actor, tree: Tree, target: Target, input: z.output<Schema>, prefetched: P): Promise<Output>;
  /**
   * What `run` returned when it committed `change` (a keyed retry after a crash answers it
   * again). Declared only by a command that writes through `commitChange` alone: its key may
   * then be claimed with its change (idempotency.ts, `commandStep`).
   */
  replay?(ctx: Ports<K>, change: Change): Output | Promise<Output>;
  /**
   * What `run` returned when it removed the tree with its key (`removalKeyHere`): a keyed
   * retry after a crash, finding that its step removed this tree, answers it again and runs
   * nothing. Declared only by the command that removes its tree.
   */
  replayRemoval?(ctx: Ports<K>, treeId: string): Output;
}): Command<Target, Schema, Output, Actor, K | TreeCommandNeeds> {
  const { run, reads, precheck, prefetch, needs, replay, replayRemoval, ...rest } = definition;
  if (reads && prefetch) throw new Error(`Command ${rest.name} reads without the lock; it cannot prefetch under it.`);
  const self: Command<Target, Schema, Output, Actor, K | TreeCommandNeeds> = {
    ...rest,
    needs: allNeeds<K | TreeCommandNeeds>(needs, ["store", "treeLocks", "treeRaces"]),
    run: (ctx, actor, target, input) =>
      commandStep(async (committed) => {
        if (committed) return replayed(rest.name, ctx, committed, replay);
        // The tree is gone: loading it would answer 404 where the removal succeeded. The
        // removal is this tree's: the key's fingerprint holds the request's path and body.
        const removed = replayRemoval && treeTheStepRemoved();
        if (removed) return replayRemoval(ctx, removed);
        precheck?.(ctx, target, input);
        const action = actionOf(self, input, target, actor) as TreeAction;
        if (reads) return loadTree(ctx, actor, target.treeId, action).then((tree) => run(ctx, actor, tree, target, input, undefined as P));
        return withTree(
          ctx,
          actor,
          target.treeId,
          action,
          (tree, prefetched: P) => run(ctx, actor, tree, target, input, prefetched),
          prefetch && (() => prefetch(ctx, actor, target, input)),
        );
      }, replay !== undefined),
  };
  return Object.freeze(self);
}

/**
 * The edge's one call: parses `body` with the command's schema, then runs it.
 * @throws ValidationError when the body does not fit the schema (nothing runs), and
 *   whatever the command throws.
 */
export async function execute<Target, Schema extends z.ZodType, Output, A extends Actor | null, K extends keyof DomainContext>(
  ctx: Ports<K>,
  actor: A,
  cmd: Command<Target, Schema, Output, A, K>,
  target: Target,
  body: unknown,
): Promise<Output> {
  // Async, so that a body refused here is a rejected promise like any other failure (a
  // caller's `.catch` giving back a sign-up budget sees it).
  return cmd.run(ctx, actor, target, parseInput(cmd.input, body));
}
