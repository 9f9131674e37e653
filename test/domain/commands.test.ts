/**
 * The commands against SPEC §3 (issue 13): each command on a tree declares the policy
 * action it is checked against, and `treeCommand` checks exactly that one. This table is
 * written from the SPEC's matrix, not from the declarations: for every tree command and
 * every kind of caller it says what the caller must meet, and each row runs the command
 * on the in-memory store (no server) and compares. A command declaring the wrong action
 * (`write` where the SPEC says owner only, say) fails its row.
 */
import { beforeEach, describe, expect, it } from "vitest";
import { loadConfig } from "../../src/config.js";
import { actionOf, command, execute } from "../../src/domain/command.js";
import { commands } from "../../src/domain/commands.js";
import { createDomainContext, type DomainContext, type Ports } from "../../src/domain/context.js";
import { can, SYSTEM_ACTOR, type Actor } from "../../src/domain/policy.js";
import { formatsOffThread } from "../../src/formats/off-thread.js";
import { scryptHasherFor } from "../../src/auth/scrypt-hasher.js";
import type { StoredCard, Tree } from "../../src/shared/records.js";
import { openMemoryStore } from "../../src/store/memory-store.js";
import { noInput } from "../../src/shared/schemas.js";

type Caller = "owner" | "collaborator" | "other";
type Outcome = "ok" | "forbidden" | "not_found";

interface World {
  ctx: DomainContext;
  users: Record<Caller | "dave", Actor & { email: string }>;
  tree: Tree;
  cards: StoredCard[];
  trashedId: string;
}

let world: World;

/**
 * The context with only the members `cmd` declares it needs: every command in the table runs
 * on its slice, so one that read an undeclared port (through a cast the types let by) would
 * find it missing and fail here.
 */
function onlyNeeds<K extends keyof DomainContext>(ctx: DomainContext, cmd: { needs: readonly K[] }): Ports<K> {
  return Object.fromEntries(cmd.needs.map((key) => [key, ctx[key]])) as Ports<K>;
}

beforeEach(async () => {
  const config = loadConfig({ SIGNUP: "open", EXPORT_WORKERS: "0" });
  const ctx = createDomainContext(openMemoryStore(), config, { formats: formatsOffThread(config.exports), hasher: scryptHasherFor(config.limits) });
  // Accounts straight into the store: hashing a password four times per test would be
  // most of this file's time, and sign-up is not what it tests.
  let n = 0;
  const signUp = async (email: string) => {
    const user = { _id: (++n).toString(16).padStart(24, "0"), email, passwordHash: "-", limit: -1, favoriteTrees: [], randomIndex: 0, userHash: "0", createdAt: "2026-01-01T00:00:00.000Z" };
    await ctx.store.users.insert(user);
    return user;
  };
  const users = {
    owner: await signUp("owner@example.com"),
    collaborator: await signUp("collaborator@example.com"),
    other: await signUp("other@example.com"),
    dave: await signUp("dave@example.com"),
  };
  const made = await execute(ctx, users.owner, commands.createTree, {}, { name: "T", seed: "# A\n\n# B\n\n# C" });
  for (const who of [users.collaborator, users.dave]) {
    await execute(ctx, users.owner, commands.addCollaborator, { treeId: made._id }, { email: who.email });
  }
  const [, , c] = await ctx.store.cards.liveByTree(made._id);
  await execute(ctx, users.owner, commands.deleteCard, { treeId: made._id, cardId: c._id }, undefined);
  world = {
    ctx,
    users,
    tree: (await ctx.store.trees.byId(made._id))!,
    cards: await ctx.store.cards.liveByTree(made._id),
    trashedId: c._id,
  };
});

async function publish(): Promise<void> {
  await execute(onlyNeeds(world.ctx, commands.updateTree), world.users.owner, commands.updateTree, { treeId: world.tree._id }, { publicUrl: "open-tree" });
  world.tree = (await world.ctx.store.trees.byId(world.tree._id))!;
}

interface Row {
  what: string;
  command: keyof typeof commands;
  /** SPEC §3's answer for each caller on a private tree, and for `other` once it is public. */
  expect: Record<Caller, Outcome> & { otherWhenPublic: Outcome };
  run(actor: Actor): Promise<unknown>;
  /** The declared action, for rows whose command declares one. */
  declared?(actor: Actor): string;
}

const writer = { owner: "ok", collaborator: "ok", other: "not_found", otherWhenPublic: "not_found" } as const;
const ownerOnly = { owner: "ok", collaborator: "forbidden", other: "not_found", otherWhenPublic: "not_found" } as const;

const rows: Row[] = [
  { what: "create a card", command: "createCard", expect: writer, run: (a) => execute(onlyNeeds(world.ctx, commands.createCard), a, commands.createCard, { treeId: world.tree._id }, { treeId: world.tree._id, parentId: null, position: 9, content: "new" }) },
  { what: "modify a card", command: "updateCard", expect: writer, run: (a) => execute(onlyNeeds(world.ctx, commands.updateCard), a, commands.updateCard, { treeId: world.tree._id, cardId: world.cards[0]._id }, { content: "edited" }) },
  { what: "delete a card", command: "deleteCard", expect: writer, run: (a) => execute(onlyNeeds(world.ctx, commands.deleteCard), a, commands.deleteCard, { treeId: world.tree._id, cardId: world.cards[0]._id }, undefined) },
  { what: "import", command: "importSeed", expect: writer, run: (a) => execute(onlyNeeds(world.ctx, commands.importSeed), a, commands.importSeed, { treeId: world.tree._id }, { seed: "# D" }) },
  { what: "restore a deleted card", command: "restoreCard", expect: writer, run: (a) => execute(onlyNeeds(world.ctx, commands.restoreCard), a, commands.restoreCard, { treeId: world.tree._id, cardId: world.trashedId }, undefined) },
  { what: "restore the tree to a revision", command: "restoreTree", expect: writer, run: (a) => execute(onlyNeeds(world.ctx, commands.restoreTree), a, commands.restoreTree, { treeId: world.tree._id }, { revision: 1 }) },
  { what: "revert a change", command: "revertChange", expect: writer, run: (a) => execute(onlyNeeds(world.ctx, commands.revertChange), a, commands.revertChange, { treeId: world.tree._id }, { revision: world.tree.revision }) },
  { what: "rename the tree", command: "updateTree", expect: writer, run: (a) => execute(onlyNeeds(world.ctx, commands.updateTree), a, commands.updateTree, { treeId: world.tree._id }, { name: "Renamed" }) },
  { what: "set latex", command: "updateTree", expect: writer, run: (a) => execute(onlyNeeds(world.ctx, commands.updateTree), a, commands.updateTree, { treeId: world.tree._id }, { latex: true }) },
  { what: "set publicUrl", command: "updateTree", expect: ownerOnly, run: (a) => execute(onlyNeeds(world.ctx, commands.updateTree), a, commands.updateTree, { treeId: world.tree._id }, { publicUrl: "elsewhere" }) },
  { what: "add a collaborator", command: "addCollaborator", expect: ownerOnly, run: (a) => execute(onlyNeeds(world.ctx, commands.addCollaborator), a, commands.addCollaborator, { treeId: world.tree._id }, { email: "newcomer@example.com" }).catch(notFoundUserIsOk) },
  { what: "remove another collaborator", command: "removeCollaborator", expect: ownerOnly, run: (a) => execute(onlyNeeds(world.ctx, commands.removeCollaborator), a, commands.removeCollaborator, { treeId: world.tree._id, userId: world.users.dave._id }, undefined) },
  { what: "delete the tree", command: "deleteTree", expect: ownerOnly, run: (a) => execute(onlyNeeds(world.ctx, commands.deleteTree), a, commands.deleteTree, { treeId: world.tree._id }, undefined) },
  { what: "clone", command: "cloneTree", expect: writer, run: (a) => execute(onlyNeeds(world.ctx, commands.cloneTree), a, commands.cloneTree, { treeId: world.tree._id }, undefined) },
  {
    what: "clonePublic",
    command: "clonePublicTree",
    expect: { owner: "ok", collaborator: "ok", other: "not_found", otherWhenPublic: "ok" },
    run: (a) => execute(onlyNeeds(world.ctx, commands.clonePublicTree), a, commands.clonePublicTree, { idOrUrl: world.tree._id }, undefined),
  },
];

/** Adding a user who does not exist is past the policy: the caller was allowed to try. */
function notFoundUserIsOk(err: { code?: string; message?: string }): string {
  if (err.code === "not_found" && /user with this email/.test(err.message ?? "")) return "tried";
  throw err;
}

async function outcome(run: () => Promise<unknown>): Promise<Outcome> {
  try {
    await run();
    return "ok";
  } catch (err) {
    const code = (err as { code?: string }).code;
    if (code === "forbidden" || code === "not_found") return code;
    throw err;
  }
}

describe("every tree command meets SPEC §3 for every caller", () => {
  for (const row of rows) {
    for (const caller of ["owner", "collaborator", "other"] as const) {
      it(`${row.what}: ${caller} → ${row.expect[caller]}`, async () => {
        const revision = world.tree.revision;
        const result = await outcome(() => row.run(world.users[caller]));
        expect(result).toBe(row.expect[caller]);
        // A refused command changed nothing.
        if (result !== "ok") expect((await world.ctx.store.trees.byId(world.tree._id))?.revision).toBe(revision);
      });
    }
    it(`${row.what}: another user, tree public → ${row.expect.otherWhenPublic}`, async () => {
      await publish();
      expect(await outcome(() => row.run(world.users.other))).toBe(row.expect.otherWhenPublic);
    });
  }

  it("leaving: a collaborator may remove themself, the owner may not", async () => {
    const { ctx, tree, users } = world;
    const leave = (who: Actor) => execute(ctx, who, commands.removeCollaborator, { treeId: tree._id, userId: who._id }, undefined);
    expect(await outcome(() => leave(users.owner))).toBe("forbidden");
    expect(await outcome(() => leave(users.other))).toBe("not_found");
    await leave(users.collaborator);
    expect((await ctx.store.trees.byId(tree._id))?.users).not.toContain(users.collaborator._id);
  });
});

describe("a command's declared action is the policy's decision", () => {
  it("updateTree and removeCollaborator declare the action their input calls for", () => {
    const { tree, users } = world;
    const target = { treeId: tree._id };
    expect(actionOf(commands.updateTree, { name: "x" }, target, users.owner)).toBe("write");
    expect(actionOf(commands.updateTree, { publicUrl: null }, target, users.owner)).toBe("administer");
    const self = { treeId: tree._id, userId: users.collaborator._id };
    expect(actionOf(commands.removeCollaborator, {}, self, users.collaborator)).toBe("leave");
    expect(actionOf(commands.removeCollaborator, {}, self, users.owner)).toBe("administer");
  });

  it("the commands that write a tree declare an action a collaborator may or may not do, as §3 says", () => {
    const { tree, users } = world;
    const member = { ...users.collaborator };
    const declared = (name: keyof typeof commands) => commands[name].action;
    for (const name of ["createCard", "updateCard", "deleteCard", "importSeed", "restoreCard", "restoreTree", "revertChange", "cloneTree"] as const) {
      expect([name, can(member, declared(name) as "write", tree)]).toEqual([name, true]);
    }
    for (const name of ["deleteTree", "addCollaborator"] as const) {
      expect([name, can(member, declared(name) as "administer", tree)]).toEqual([name, false]);
    }
  });

  it("a body that does not fit the command's schema is refused before anything runs", async () => {
    const { ctx, tree, users } = world;
    await expect(execute(ctx, users.owner, commands.updateTree, { treeId: tree._id }, { name: "" })).rejects.toMatchObject({
      code: "invalid_request",
      details: [{ path: "name", message: "must not be empty" }],
    });
    expect((await ctx.store.trees.byId(tree._id))?.revision).toBe(tree.revision);
  });
});

/**
 * The commands that act on no tree (accounts, scripts, preferences, creating a tree), held
 * to their rules (SPEC §3 and policy.ts): what each kind of caller meets, written from the
 * rules, not from the declarations. `command` checks the declared action before `run`.
 */
type AccountCaller = "self" | "other" | "anonymous" | "operator";
type AccountOutcome = "ok" | "forbidden" | "not_found" | "unauthenticated";

interface AccountRow {
  what: string;
  command: keyof typeof commands;
  expect: Record<AccountCaller, AccountOutcome>;
  /** Runs the command as `actor` on things of `self` (the tree's owner). */
  run(actor: Actor | null): Promise<unknown>;
}

const actorOf = (caller: AccountCaller): Actor | null =>
  caller === "self" ? world.users.owner : caller === "other" ? world.users.other : caller === "operator" ? SYSTEM_ACTOR : null;

async function ownScript(): Promise<string> {
  const script = await execute(onlyNeeds(world.ctx, commands.createScript), world.users.owner, commands.createScript, {}, { name: "mine.js", body: "1" });
  return script._id;
}

async function accountOutcome(run: () => Promise<unknown>): Promise<AccountOutcome> {
  try {
    await run();
    return "ok";
  } catch (err) {
    const code = (err as { code?: string }).code;
    if (code === "forbidden" || code === "not_found" || code === "unauthenticated") return code;
    throw err;
  }
}

let emails = 0;
const accountRows: AccountRow[] = [
  {
    what: "sign up while sign-up is open",
    command: "signUp",
    expect: { self: "ok", other: "ok", anonymous: "ok", operator: "ok" },
    run: (a) => execute(onlyNeeds(world.ctx, commands.signUp), a, commands.signUp, {}, { email: `new${++emails}@example.com`, password: "correct horse battery" }),
  },
  {
    what: "sign up while sign-up is closed",
    command: "signUp",
    expect: { self: "forbidden", other: "forbidden", anonymous: "forbidden", operator: "ok" },
    run: (a) => {
      // The same ports with sign-up closed: the context itself is never changed after it is built.
      const closed = { ...world.ctx, config: { ...world.ctx.config, signup: false } };
      return execute(onlyNeeds(closed, commands.signUp), a, commands.signUp, {}, { email: `new${++emails}@example.com`, password: "correct horse battery" });
    },
  },
  {
    what: "set one's favourites",
    command: "updateMe",
    expect: { self: "ok", other: "forbidden", anonymous: "unauthenticated", operator: "ok" },
    run: (a) => execute(onlyNeeds(world.ctx, commands.updateMe), a as Actor, commands.updateMe, { user: world.users.owner as never }, { favoriteTrees: [world.tree._id] }),
  },
  {
    what: "set one's preferences",
    command: "setPreferences",
    expect: { self: "ok", other: "forbidden", anonymous: "unauthenticated", operator: "ok" },
    run: (a) => execute(onlyNeeds(world.ctx, commands.setPreferences), a, commands.setPreferences, { userId: world.users.owner._id }, { theme: "dark" }),
  },
  {
    what: "set a password without the old one",
    command: "resetPassword",
    expect: { self: "forbidden", other: "forbidden", anonymous: "forbidden", operator: "ok" },
    run: (a) => execute(onlyNeeds(world.ctx, commands.resetPassword), a as Actor, commands.resetPassword, {}, { email: world.users.owner.email, password: "another long secret" }),
  },
  {
    what: "set a card limit",
    command: "setCardLimit",
    expect: { self: "forbidden", other: "forbidden", anonymous: "forbidden", operator: "ok" },
    run: (a) => execute(onlyNeeds(world.ctx, commands.setCardLimit), a as Actor, commands.setCardLimit, { email: world.users.owner.email }, { limit: 5 }),
  },
  {
    what: "create a tree",
    command: "createTree",
    expect: { self: "ok", other: "ok", anonymous: "unauthenticated", operator: "forbidden" },
    run: (a) => execute(onlyNeeds(world.ctx, commands.createTree), a as Actor, commands.createTree, {}, { name: "Mine" }),
  },
  {
    what: "keep a script",
    command: "createScript",
    expect: { self: "ok", other: "ok", anonymous: "unauthenticated", operator: "forbidden" },
    run: (a) => execute(onlyNeeds(world.ctx, commands.createScript), a as Actor, commands.createScript, {}, { name: "x.js", body: "1" }),
  },
  {
    what: "change one's script",
    command: "updateScript",
    expect: { self: "ok", other: "not_found", anonymous: "unauthenticated", operator: "not_found" },
    run: async (a) => execute(onlyNeeds(world.ctx, commands.updateScript), a as Actor, commands.updateScript, { scriptId: await ownScript() }, { body: "2" }),
  },
  {
    what: "delete one's script",
    command: "deleteScript",
    expect: { self: "ok", other: "not_found", anonymous: "unauthenticated", operator: "not_found" },
    run: async (a) => execute(onlyNeeds(world.ctx, commands.deleteScript), a as Actor, commands.deleteScript, { scriptId: await ownScript() }, undefined),
  },
];

describe("every other command meets its rule for every caller", () => {
  for (const row of accountRows) {
    for (const caller of ["self", "other", "anonymous", "operator"] as const) {
      it(`${row.what}: ${caller} → ${row.expect[caller]}`, async () => {
        const before = await snapshot();
        const result = await accountOutcome(() => row.run(actorOf(caller)));
        expect(result).toBe(row.expect[caller]);
        // A refused command changed nothing (the script made for the row aside).
        if (result !== "ok") expect(await snapshot()).toEqual({ ...before, scripts: expect.any(Number) as number });
      });
    }
  }

  it("the refused changed nothing: the owner's record, scripts and trees are as they were", async () => {
    const scriptId = await ownScript();
    await accountOutcome(() => execute(onlyNeeds(world.ctx, commands.updateScript), world.users.other, commands.updateScript, { scriptId }, { body: "stolen" }));
    await accountOutcome(() => execute(onlyNeeds(world.ctx, commands.setPreferences), world.users.other, commands.setPreferences, { userId: world.users.owner._id }, { theme: "dark" }));
    expect((await world.ctx.store.scripts.byId(scriptId))?.body).toBe("1");
    expect((await world.ctx.store.users.byId(world.users.owner._id))?.preferences?.theme).toBeUndefined();
  });

  it("lists every command in one table or the other", () => {
    const listed = new Set<string>([...rows.map((row) => row.command), ...accountRows.map((row) => row.command)]);
    expect(Object.keys(commands).filter((name) => !listed.has(name))).toEqual([]);
  });
});

async function snapshot() {
  const owner = await world.ctx.store.users.byId(world.users.owner._id);
  return {
    passwordHash: owner?.passwordHash,
    limit: owner?.limit,
    preferences: owner?.preferences,
    favoriteTrees: owner?.favoriteTrees,
    trees: (await world.ctx.store.trees.forUser(world.users.owner._id)).length,
    users: (await world.ctx.store.users.list()).length,
    scripts: (await world.ctx.store.scripts.forUser(world.users.owner._id)).length,
  };
}

describe("command: deny by default", () => {
  it("refuses a caller its declared action does not allow, before run, though run checks nothing", async () => {
    let ran = 0;
    const operatorOnly = command({
      name: "operatorOnly",
      input: noInput,
      action: "operator",
      needs: [],
      run: async () => {
        ran++;
      },
    });
    await expect(execute(world.ctx, world.users.owner, operatorOnly, {}, undefined)).rejects.toMatchObject({ code: "forbidden" });
    await expect(execute(world.ctx, null as unknown as Actor, operatorOnly, {}, undefined)).rejects.toMatchObject({ code: "forbidden" });
    expect(ran).toBe(0);
    await execute(world.ctx, SYSTEM_ACTOR, operatorOnly, {}, undefined);
    expect(ran).toBe(1);
  });

  it("will not declare an action on something without loading that something", () => {
    expect(() => command({ name: "unchecked", input: noInput, action: "ownScript", needs: [], run: async () => undefined })).toThrow(/loads nothing/);
    expect(() => command({ name: "unchecked", input: noInput, action: "write", needs: [], run: async () => undefined })).toThrow(/loads nothing/);
  });
});
