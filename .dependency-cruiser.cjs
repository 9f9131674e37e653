/**
 * Dependency rules (issue 13, STYLE.md 11): dependencies point inward, and no module
 * reaches back into one that depends on it. `npm run lint` runs this over src/;
 * test/lint/layers.test.ts runs it over a deliberately broken fixture to show each rule
 * biting: its tree (test/lint/fixture/src/) obeys the same rules as src/.
 *
 * The layers, inside out: the kernel (shared: records, ids, tree order, input schemas, error
 * codes); the domain with its ports (domain/ports: store, formats); the adapters (store
 * engines, formats); the transports (rest, graphql, http, auth); the entry points (app,
 * server, main, cli). The browser client (web) shares only the kernel with the server.
 */
const SRC = "^(test/lint/fixture/)?src/";
const TRANSPORTS = `${SRC}(rest|graphql|http|auth)/`;
const ENTRY_POINTS = `${SRC}((app|server|main)\\.ts$|cli/)`;
const STORE_ADAPTERS = `${SRC}store/`;

module.exports = {
  forbidden: [
    {
      name: "no-cycles",
      severity: "error",
      comment: "A runtime import cycle: modules that need each other are one module, or a piece belongs lower.",
      from: {},
      to: { circular: true, viaOnly: { dependencyTypesNot: ["type-only"] } },
    },
    {
      name: "domain-inward",
      severity: "error",
      comment: "The domain depends only on the kernel and its own ports (and the configuration's type): adapters plug into the ports.",
      from: { path: `${SRC}domain/` },
      to: { path: `${SRC}(?!domain/|shared/|config\\.ts$)` },
    },
    {
      name: "formats-inward",
      severity: "error",
      comment: "Importers and exporters turn records into files and back; they depend only on the kernel (not even on the domain's ports, which they satisfy by shape).",
      from: { path: `${SRC}formats/` },
      to: { path: `${SRC}(?!formats/|shared/)` },
    },
    {
      name: "store-below-transports",
      severity: "error",
      comment: "A store adapter serves the domain; it knows nothing of HTTP, GraphQL or the CLI.",
      from: { path: `${SRC}store/` },
      to: { path: [TRANSPORTS, ENTRY_POINTS, `${SRC}web/`, `${SRC}formats/`] },
    },
    {
      name: "transports-use-the-domain",
      severity: "error",
      comment: "REST and GraphQL call domain commands; neither touches a store engine, and neither imports the other.",
      from: { path: `${SRC}(rest|graphql)/` },
      to: { path: [STORE_ADAPTERS, ENTRY_POINTS] },
    },
    {
      name: "rest-not-graphql",
      severity: "error",
      from: { path: `${SRC}rest/` },
      to: { path: `${SRC}graphql/` },
    },
    {
      name: "graphql-not-rest",
      severity: "error",
      from: { path: `${SRC}graphql/` },
      to: { path: `${SRC}rest/` },
    },
    {
      name: "web-shares-only-records",
      severity: "error",
      comment: "The browser bundle shares the kernel (shared/) with the server, nothing else.",
      from: { path: `${SRC}web/` },
      to: { path: `${SRC}(?!web/|shared/)` },
    },
    {
      name: "shared-is-the-kernel",
      severity: "error",
      comment: "shared/ runs in the browser and on the server alike: it imports only itself and packages, never node: built-ins.",
      // Its tests run under Node and may read fixtures.
      from: { path: `${SRC}shared/`, pathNot: "\\.test\\.ts$" },
      to: { path: [`${SRC}(?!shared/)`, "^node:", "^(fs|path|crypto|os|child_process|worker_threads|net|http)$"] },
    },
    {
      name: "nedb-public-api-only",
      severity: "error",
      comment:
        "Issue 31: the embedded store uses NeDB only through its public API, nedb-promises' main entry (embedded-collections.ts). No private module of either package (lib/, src/), and outside tests not @seald-io/nedb itself. ESLint refuses the private fields (__original, the executor, ...).",
      from: { path: SRC },
      to: { path: "node_modules/(@seald-io/nedb|nedb-promises)/(?!index\\.js$)" },
    },
    {
      name: "nedb-through-nedb-promises",
      severity: "error",
      from: { path: SRC, pathNot: "\\.test\\.ts$" },
      to: { path: "node_modules/@seald-io/nedb/" },
    },
  ],
  options: {
    doNotFollow: { path: "node_modules" },
    tsConfig: { fileName: "tsconfig.json" },
    tsPreCompilationDeps: true,
    enhancedResolveOptions: { extensions: [".ts", ".js", ".mjs"] },
  },
};
