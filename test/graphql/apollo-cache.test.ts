/**
 * Ids that name one object (issue 28): Apollo Client's InMemoryCache, against the real
 * server, reads the server's truth after each mutation without a refetch. Each test fills
 * the cache with queries, runs a mutation selecting what it changed, then reads the same
 * queries from the cache alone and compares them with what the server answers now.
 */
import { ApolloClient, gql, HttpLink, InMemoryCache, type DocumentNode } from "@apollo/client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildCard, buildTree, buildUser, shareTree, type Api } from "../helpers/api.js";
import { startInProcessServer, type InProcessServer } from "../helpers/in-process-server.js";
import { Gql } from "./client.js";

let server: InProcessServer;
beforeAll(async () => {
  server = await startInProcessServer();
});
afterAll(() => server.stop());

function apolloFor(api: Api): ApolloClient {
  return new ApolloClient({
    link: new HttpLink({ uri: `${server.url}/graphql`, headers: { authorization: api.authHeader! } }),
    cache: new InMemoryCache(),
  });
}

/** A value without Apollo's `__typename`s, to compare with a plain client's answer. */
function plain(value: unknown): unknown {
  return JSON.parse(JSON.stringify(value, (key, v) => (key === "__typename" ? undefined : v)));
}

/** What the cache alone says for `query`, and what the server says now, by another client. */
async function cachedAndTrue(apollo: ApolloClient, api: Api, query: DocumentNode, variables: Record<string, unknown> = {}) {
  const cached = apollo.readQuery({ query, variables });
  const truth = await Gql.as(api).data(query.loc!.source.body, variables);
  return { cached: plain(cached), truth };
}

const TREE_CARDS = gql`
  query TreeCards($id: ID!) {
    tree(id: $id) { id revision cards { id content parentId position } roots { id content children { id content } } }
  }
`;

describe("Apollo InMemoryCache after each mutation", () => {
  it("keeps each tree's collaborator apart: the same user owns one tree and not the other", async () => {
    const alice = await buildUser(server.url, "alice");
    const bob = await buildUser(server.url, "bob");
    const mine = await buildTree(alice, { name: "alice's" });
    const theirs = await buildTree(bob, { name: "bob's" });
    await shareTree(alice, mine._id, bob);
    await shareTree(bob, theirs._id, alice);
    const apollo = apolloFor(alice);
    const COLLABORATORS = gql`query ($id: ID!) { tree(id: $id) { id collaborators { id email owner } } }`;
    await apollo.query({ query: COLLABORATORS, variables: { id: mine._id } });
    await apollo.query({ query: COLLABORATORS, variables: { id: theirs._id } });
    for (const tree of [mine, theirs]) {
      const { cached, truth } = await cachedAndTrue(apollo, alice, COLLABORATORS, { id: tree._id });
      expect(cached).toEqual(truth);
    }
    // Removing bob from alice's tree: the answer (his user id) with the tree names the
    // collaborator to evict, and the cached list then reads as the server's.
    await apollo.mutate({
      mutation: gql`mutation ($t: ID!, $u: ID!) { removeCollaborator(treeId: $t, userId: $u) }`,
      variables: { t: mine._id, u: bob.user._id },
      update(cache, { data }) {
        cache.evict({ id: cache.identify({ __typename: "Collaborator", id: `${mine._id}:${(data as any).removeCollaborator}` }) });
      },
    });
    const afterRemoval = await cachedAndTrue(apollo, alice, COLLABORATORS, { id: mine._id });
    expect(afterRemoval.cached).toEqual(afterRemoval.truth);
    expect((afterRemoval.truth as any).tree.collaborators).toHaveLength(1);
    const aliceOn = (id: string) =>
      (apollo.readQuery({ query: COLLABORATORS, variables: { id } }) as any).tree.collaborators.find((c: any) => c.email === alice.user.email).owner;
    expect([aliceOn(mine._id), aliceOn(theirs._id)]).toEqual([true, false]);
  });

  it("setPreferences updates the cached me.preferences", async () => {
    const alice = await buildUser(server.url, "prefs");
    const apollo = apolloFor(alice);
    const ME = gql`{ me { id email preferences { id theme fontSize } } }`;
    await apollo.query({ query: ME });
    await apollo.mutate({ mutation: gql`mutation { setPreferences(input: { theme: "dark", fontSize: 20 }) { id theme fontSize } }` });
    const { cached, truth } = await cachedAndTrue(apollo, alice, ME);
    expect(cached).toEqual(truth);
    expect((cached as any).me.preferences).toMatchObject({ theme: "dark", fontSize: 20 });
  });

  it("createCard puts the card in the cached Tree.cards, its parent's children and the tree's revision", async () => {
    const alice = await buildUser(server.url, "creator");
    const tree = await buildTree(alice, { seed: "# one\n\n## child" });
    const apollo = apolloFor(alice);
    await apollo.query({ query: TREE_CARDS, variables: { id: tree._id } });
    const [one] = (await alice.get(`/api/trees/${tree._id}/cards`)).body;
    for (const parentId of [one._id, null]) {
      await apollo.mutate({
        mutation: gql`
          mutation ($input: CreateCardInput!) {
            createCard(input: $input) {
              id content parentId position
              parent { id children { id content } }
              tree { id revision cards { id content parentId position } roots { id content children { id content } } }
            }
          }
        `,
        variables: { input: { treeId: tree._id, parentId, position: 10, content: `new under ${parentId ?? "the first column"}` } },
      });
      const { cached, truth } = await cachedAndTrue(apollo, alice, TREE_CARDS, { id: tree._id });
      expect(cached).toEqual(truth);
    }
    expect((apollo.readQuery({ query: TREE_CARDS, variables: { id: tree._id } }) as any).tree.cards).toHaveLength(4);
  });

  it("moveCard updates both parents' children, the card and the tree", async () => {
    const alice = await buildUser(server.url, "mover");
    const tree = await buildTree(alice, { seed: "# a\n\n## a1\n\n## a2\n\n# b" });
    const apollo = apolloFor(alice);
    await apollo.query({ query: TREE_CARDS, variables: { id: tree._id } });
    const cards = (await alice.get(`/api/trees/${tree._id}/cards`)).body;
    const [a1, b] = [cards.find((c: any) => c.content === "## a1"), cards.find((c: any) => c.content === "# b")];
    const MOVE = gql`
      mutation ($t: ID!, $id: ID!, $parentId: ID, $position: Float!) {
        moveCard(treeId: $t, id: $id, parentId: $parentId, position: $position) {
          card { id parentId position parent { id children { id content } } }
          from { id children { id content } }
          tree { id revision cards { id content parentId position } roots { id content children { id content } } }
        }
      }
    `;
    await apollo.mutate({ mutation: MOVE, variables: { t: tree._id, id: a1._id, parentId: b._id, position: 0 } });
    let { cached, truth } = await cachedAndTrue(apollo, alice, TREE_CARDS, { id: tree._id });
    expect(cached).toEqual(truth);
    // To the first column and back under a.
    await apollo.mutate({ mutation: MOVE, variables: { t: tree._id, id: a1._id, parentId: null, position: 5 } });
    ({ cached, truth } = await cachedAndTrue(apollo, alice, TREE_CARDS, { id: tree._id }));
    expect(cached).toEqual(truth);
    expect((truth as any).tree.roots.map((r: any) => r.content)).toEqual(["# a", "# b", "## a1"]);
  });

  it("deleteCard takes the subtree out of every cached list, and its ids evict the cards", async () => {
    const alice = await buildUser(server.url, "deleter");
    const tree = await buildTree(alice, { seed: "# a\n\n## a1\n\n### a1x\n\n## a2" });
    const apollo = apolloFor(alice);
    await apollo.query({ query: TREE_CARDS, variables: { id: tree._id } });
    const cards = (await alice.get(`/api/trees/${tree._id}/cards`)).body;
    const a1 = cards.find((c: any) => c.content === "## a1");
    const a1x = cards.find((c: any) => c.content === "### a1x");
    const CARD = gql`query ($id: ID!) { card(id: $id) { id content } }`;
    await apollo.query({ query: CARD, variables: { id: a1x._id } });
    await apollo.mutate({
      mutation: gql`
        mutation ($t: ID!, $id: ID!) {
          deleteCard(treeId: $t, id: $id) {
            deleted
            parent { id children { id content } }
            tree { id revision cards { id content parentId position } roots { id content children { id content } } }
          }
        }
      `,
      variables: { t: tree._id, id: a1._id },
      update(cache, { data }) {
        for (const id of (data as any).deleteCard.deleted) cache.evict({ id: cache.identify({ __typename: "Card", id }) });
        cache.gc();
      },
    });
    const { cached, truth } = await cachedAndTrue(apollo, alice, TREE_CARDS, { id: tree._id });
    expect(cached).toEqual(truth);
    expect((truth as any).tree.cards.map((c: any) => c.content)).toEqual(["# a", "## a2"]);
    // Evicted: the cache no longer answers for a deleted card; the server says null too.
    expect(apollo.readQuery({ query: CARD, variables: { id: a1x._id } })).toBeNull();
    expect(await Gql.as(alice).data(CARD.loc!.source.body, { id: a1x._id })).toEqual({ card: null });
    expect(Object.keys(apollo.cache.extract() as object)).not.toContain(`Card:${a1._id}`);
    await buildCard(alice, tree._id, { content: "afterwards" });
  });
});
