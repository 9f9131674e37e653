import { defineConfig } from "vitest/config";

export default defineConfig({
  resolve: {
    // One copy of graphql: without this, yoga and pothos load graphql from two entry points
    // ("Cannot use GraphQLScalarType from another module or realm").
    alias: { graphql: "graphql/index.js" },
  },
  test: {
    include: ["src/**/*.test.ts", "test/**/*.test.ts"],
    globalSetup: ["test/global-setup.ts"],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // Integration suites each start their own server; two cores, so keep it modest.
    maxWorkers: 2,
  },
});
