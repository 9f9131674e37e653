import { defineConfig } from "vitest/config";

/**
 * Four projects (issue 17, SPEC §11): "unit" runs the unit tests beside the sources (src/);
 * "own-process" the few of them that need a process of their own (OWN_PROCESS_UNIT_TESTS);
 * "nedb" runs every test of test/ on the embedded store; "postgres" runs the store contract
 * and the HTTP suites again on PostgreSQL (CARDTREE_TEST_STORE=postgres: each test server
 * gets its own database, see test/helpers/postgres.ts; test/postgres-setup.ts finds or
 * starts the server).
 */
const POSTGRES_INCLUDE = ["test/offline/**/*.test.ts", "test/store/**/*.test.ts", "test/postgres/**/*.test.ts", "test/rest/**/*.test.ts", "test/graphql/**/*.test.ts", "test/reliability/**/*.test.ts"];

/**
 * Left out of the postgres project, with why. What stays (about 70% of the HTTP suites'
 * time) covers every REST and GraphQL call, both permission matrices, accounts, sessions
 * and CSRF, imports, caches, restarts, concurrency and hostile input on both stores.
 */
const POSTGRES_EXCLUDE = [
  // The embedded store's own machinery: NeDB datafiles, the data-directory lock, appends
  // that fail like a full disk (CARDTREE_FAULTS_FILE), kill -9 between appends, the CLI's
  // backup/restore of the data directory, file modes of the datafiles.
  "test/reliability/store-faults.test.ts",
  "test/reliability/data-dir-lock.test.ts",
  "test/reliability/crash.test.ts",
  "test/reliability/backup.test.ts",
  "test/reliability/limits-and-files.test.ts",
  "test/reliability/operations.test.ts",
  // The browser served as HTML and the GraphiQL page: no store behind them.
  "test/graphql/graphiql.test.ts",
  // Reads the schema file and the printed SDL: no store behind it.
  "test/graphql/schema.test.ts",
  // The OpenAPI document itself (each response of every other suite is still checked against it),
  // and Spectral's lint of it: no store behind either.
  "test/rest/openapi.test.ts",
  "test/rest/openapi-lint.test.ts",
  // Costly and decided above the store, so a second run would prove nothing new: rendering
  // exports and hostile Markdown (one tree read, which every suite does), and password
  // hashing admission and log-in throttles (process memory; the stored side of accounts is
  // in accounts and auth-hardening). graphql-limits stays: it reads 10,000-card trees.
  "test/rest/export.test.ts",
  "test/reliability/hostile-markdown.test.ts",
  "test/reliability/hostile-auth.test.ts",
];

/**
 * SHARED_PROCESSES: the integration suites (nedb and postgres projects) run with
 * isolate: false, as the unit tests do: a worker process runs file after file, and keeps the
 * modules they share (vitest itself, the test helpers, the OpenAPI document's compiled
 * validators, the sources an in-process server loads) instead of importing them afresh for
 * each file. On test/graphql, test/live, test/domain and test/store that was 35 CPU-s instead
 * of 59 (docs/performance.md, "Test suite time, part five"). What that asks of a test file: it
 * restores what it changes in the process (spies are restored after each test by
 * restoreMocks below; fake timers and process.env changes are the file's own to undo), and
 * each server it starts is stopped in its own afterAll.
 *
 * Unit tests that run in a process of their own (project "own-process"), not in the unit
 * project's shared ones. compression: a big body's first readers get whichever of brotli and
 * a fast gzip is ready first, and the test expects the gzip, which holds only while libuv's
 * thread pool has threads free for both. In a shared process brotli won once in fifteen
 * shuffled runs (not again with the same order), probably behind work another file had left
 * in the pool; alone it passed every time.
 */
const OWN_PROCESS_UNIT_TESTS = ["src/http/compression.test.ts"];

export default defineConfig({
  resolve: {
    // One copy of graphql: without this, yoga and pothos load graphql from two entry points
    // ("Cannot use GraphQLScalarType from another module or realm").
    alias: { graphql: "graphql/index.js" },
  },
  test: {
    globalSetup: ["test/global-setup.ts"],
    testTimeout: 30_000,
    // Cheap password hashes (scrypt N = 1024 instead of 16384) in every server and CLI the
    // tests start, which inherit this environment: each sign-up and first log-in hashed at
    // full cost was a fixed tax on every suite. src/auth/scrypt-hasher.test.ts holds the
    // default to the production parameters, and hashes keep their own parameters. Set
    // PASSWORD_HASH_COST=14 when running vitest to measure a suite at the production cost.
    env: { PASSWORD_HASH_COST: process.env.PASSWORD_HASH_COST ?? "10" },
    // In CI a failed test runs once more before it counts: a few integration tests (a stream
    // across a PostgreSQL restart, a subscription through urql) failed once in a full run and
    // passed alone, on a machine shared with other work. A test that fails twice still fails
    // the run; the retried ones are named in vitest's output ("retry x1").
    retry: process.env.CI === "true" ? 1 : 0,
    hookTimeout: 60_000,
    // With files sharing processes (isolate: false), a spy a file forgot to restore would
    // follow the next file into its process: every spy is restored after each test.
    restoreMocks: true,
    // expect.poll waits for what a user would see happen (a stream's event, a card drawn):
    // vitest's default of 1 s is a deadline a loaded two-core machine misses now and then
    // (an anonymous subscription's first event, in a run with three workers; a click's answer
    // in a browser suite). A poll ends as soon as its assertion holds, so the longer deadline
    // costs a passing test nothing. (The browser harness set this for its own files with
    // vi.setConfig, which a file sharing its process with others cannot rely on.)
    expect: { poll: { timeout: 15_000 } },
    // Integration suites each start their own server; two cores, so keep it modest.
    maxWorkers: 2,
    projects: [
      {
        extends: true,
        // test/postgres/: what only the PostgreSQL store has (migrations, two processes, migrate).
        // The integration suites share worker processes (isolate: false; see SHARED_PROCESSES).
        test: { name: "nedb", include: ["test/**/*.test.ts"], exclude: ["test/postgres/**"], isolate: false },
      },
      {
        extends: true,
        // The unit tests that need a process of their own (OWN_PROCESS_UNIT_TESTS), run on the
        // embedded store's side, one fresh process a file.
        test: { name: "own-process", include: OWN_PROCESS_UNIT_TESTS },
      },
      {
        extends: true,
        // The unit tests beside the sources: no server, no data directory, no store of their
        // own choosing. One process runs many of them (isolate: false), which saves each
        // file a fresh process and a fresh import of vitest and of the modules it shares
        // with the files before it: 21-22 CPU-s instead of 30-33 for the 50 files, at load 7
        // (docs/performance.md, "Test suite time, part four"). Checked for leaks between
        // files by running them shuffled, also all in one process, with several seeds; a
        // unit test that keeps state at module level must reset it itself.
        test: { name: "unit", include: ["src/**/*.test.ts"], exclude: OWN_PROCESS_UNIT_TESTS, isolate: false },
      },
      {
        extends: true,
        test: {
          name: "postgres",
          include: POSTGRES_INCLUDE,
          exclude: POSTGRES_EXCLUDE,
          globalSetup: ["test/postgres-setup.ts"],
          env: { CARDTREE_TEST_STORE: "postgres" },
          isolate: false,
        },
      },
    ],
  },
});
