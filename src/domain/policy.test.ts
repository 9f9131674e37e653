import { describe, expect, it } from "vitest";
import { ForbiddenError, NotFoundError, UnauthenticatedError } from "../shared/errors.js";
import { authorizeOperator, authorizeOwnAccount, authorizeTree, can, maySignUp, SYSTEM_ACTOR, type TreeAction } from "./policy.js";
import type { Tree } from "../shared/records.js";

const owner = { _id: "a".repeat(24) };
const collaborator = { _id: "b".repeat(24) };
const stranger = { _id: "c".repeat(24) };

function buildTree(fields: Partial<Tree> = {}): Tree {
  return {
    __v: 0,
    _id: "t".repeat(24),
    name: "tree",
    owner: owner._id,
    users: [owner._id, collaborator._id],
    createdAt: "2026-01-01T00:00:00.000Z",
    updatedAt: "2026-01-01T00:00:00.000Z",
    ...fields,
  };
}

const actors = { owner, collaborator, stranger, anonymous: null };
type Who = keyof typeof actors;

// SPEC §3: true = allowed; otherwise the error the caller sees.
const matrix: Record<TreeAction, { private: Record<Who, true | string>; public: Record<Who, true | string> }> = {
  read: {
    private: { owner: true, collaborator: true, stranger: "404", anonymous: "401" },
    public: { owner: true, collaborator: true, stranger: true, anonymous: "401" },
  },
  export: {
    private: { owner: true, collaborator: true, stranger: "404", anonymous: "401" },
    public: { owner: true, collaborator: true, stranger: true, anonymous: true },
  },
  listCollaborators: {
    private: { owner: true, collaborator: true, stranger: "404", anonymous: "401" },
    public: { owner: true, collaborator: true, stranger: "404", anonymous: "401" },
  },
  write: {
    private: { owner: true, collaborator: true, stranger: "404", anonymous: "401" },
    public: { owner: true, collaborator: true, stranger: "404", anonymous: "401" },
  },
  administer: {
    private: { owner: true, collaborator: "403", stranger: "404", anonymous: "401" },
    public: { owner: true, collaborator: "403", stranger: "404", anonymous: "401" },
  },
  clone: {
    private: { owner: true, collaborator: true, stranger: "404", anonymous: "401" },
    public: { owner: true, collaborator: true, stranger: "404", anonymous: "401" },
  },
  clonePublic: {
    private: { owner: true, collaborator: true, stranger: "404", anonymous: "401" },
    public: { owner: true, collaborator: true, stranger: true, anonymous: "401" },
  },
  readPublic: {
    private: { owner: "404", collaborator: "404", stranger: "404", anonymous: "404" },
    public: { owner: true, collaborator: true, stranger: true, anonymous: true },
  },
  presence: {
    private: { owner: true, collaborator: true, stranger: "404", anonymous: "401" },
    public: { owner: true, collaborator: true, stranger: "404", anonymous: "401" },
  },
  leave: {
    private: { owner: "403", collaborator: true, stranger: "404", anonymous: "401" },
    public: { owner: "403", collaborator: true, stranger: "404", anonymous: "401" },
  },
  watch: {
    private: { owner: true, collaborator: true, stranger: "404", anonymous: "401" },
    public: { owner: true, collaborator: true, stranger: true, anonymous: true },
  },
};

const errorFor: Record<string, new (...args: never[]) => Error> = {
  "401": UnauthenticatedError,
  "403": ForbiddenError,
  "404": NotFoundError,
};

describe("policy", () => {
  for (const [action, byVisibility] of Object.entries(matrix) as [TreeAction, (typeof matrix)[TreeAction]][]) {
    for (const visibility of ["private", "public"] as const) {
      for (const [who, expected] of Object.entries(byVisibility[visibility]) as [Who, true | string][]) {
        it(`${action} on a ${visibility} tree by ${who}: ${expected === true ? "allowed" : expected}`, () => {
          const tree = buildTree(visibility === "public" ? { publicUrl: "open-tree" } : {});
          const actor = actors[who];
          if (expected === true) {
            expect(can(actor, action, tree)).toBe(true);
            expect(authorizeTree(actor, action, tree)).toBe(tree);
          } else {
            expect(can(actor, action, tree)).toBe(false);
            expect(() => authorizeTree(actor, action, tree)).toThrow(errorFor[expected]);
          }
        });
      }
    }
  }

  it("a missing tree is 404 to a user and 401 to the anonymous", () => {
    expect(() => authorizeTree(stranger, "read", null)).toThrow(NotFoundError);
    expect(() => authorizeTree(null, "read", null)).toThrow(UnauthenticatedError);
  });

  it("nothing at a public address is 404 to everyone, the anonymous included", () => {
    expect(() => authorizeTree(null, "readPublic", null)).toThrow(NotFoundError);
    expect(() => authorizeTree(owner, "readPublic", null)).toThrow(NotFoundError);
  });

  it("the system actor (the CLI's operator) may do everything to any tree, as its owner may", () => {
    for (const action of Object.keys(matrix) as TreeAction[]) {
      expect(can(SYSTEM_ACTOR, action, buildTree()), action).toBe(true);
    }
  });

  it("account administration is the operator's alone", () => {
    expect(() => authorizeOperator(SYSTEM_ACTOR)).not.toThrow();
    expect(() => authorizeOperator(owner)).toThrow(ForbiddenError);
    expect(() => authorizeOperator(null)).toThrow(ForbiddenError);
  });

  it("a user's own settings are theirs and the operator's, and need a signed-in caller", () => {
    expect(() => authorizeOwnAccount(owner, owner._id)).not.toThrow();
    expect(() => authorizeOwnAccount(SYSTEM_ACTOR, owner._id)).not.toThrow();
    expect(() => authorizeOwnAccount(stranger, owner._id)).toThrow(ForbiddenError);
    expect(() => authorizeOwnAccount(null, owner._id)).toThrow(UnauthenticatedError);
  });

  it("sign-up: anyone while it is open, only the operator while it is closed", () => {
    expect(maySignUp(null, true)).toBe(true);
    expect(maySignUp(null, false)).toBe(false);
    expect(maySignUp(owner, false)).toBe(false);
    expect(maySignUp(SYSTEM_ACTOR, false)).toBe(true);
  });
});
