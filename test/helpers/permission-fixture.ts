/**
 * The world the SPEC §3 tables (test/rest/permissions.test.ts and
 * test/reliability/graphql-permissions.test.ts) ask every operation in: a tree with a card,
 * its owner, a collaborator, another signed-up user and an anonymous caller.
 */
import { Api, buildCard, buildTree, buildUser, shareTree } from "./api.js";

export type Role = "owner" | "collaborator" | "other" | "anonymous";
export const ROLES: readonly Role[] = ["owner", "collaborator", "other", "anonymous"];

export type People = Record<Exclude<Role, "anonymous">, Api & { user: any }>;

export interface PermissionFixture {
  roles: Record<Role, Api & { user?: any }>;
  /** As its owner lists it, after sharing and publishing. */
  tree: any;
  card: any;
}

export async function signUpPeople(url: string): Promise<People> {
  return {
    owner: await buildUser(url, "owner"),
    collaborator: await buildUser(url, "collab"),
    other: await buildUser(url, "other"),
  };
}

/**
 * A fresh tree "Secret plans" (a seeded heading and one more card) shared with the
 * collaborator, and published at `pub-<id>` when `isPublic`. The people are signed up
 * anew unless given (each sign-up costs a password hash).
 */
export async function permissionFixture(url: string, isPublic: boolean, people?: People): Promise<PermissionFixture> {
  const { owner, collaborator, other } = people ?? (await signUpPeople(url));
  const created = await buildTree(owner, { name: "Secret plans", seed: "# secret heading" });
  const card = await buildCard(owner, created._id, { content: "secret card" });
  await shareTree(owner, created._id, collaborator);
  if (isPublic) await owner.put(`/api/trees/${created._id}`, { publicUrl: `pub-${created._id}` });
  const tree = (await owner.get("/api/trees")).body.find((t: any) => t._id === created._id);
  return { roles: { owner, collaborator, other, anonymous: new Api(url) }, tree, card };
}
