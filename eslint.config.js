// The linter (issue 13): typescript-eslint's recommended rules over every TypeScript and
// JavaScript file. Layering and cycles are checked by dependency-cruiser
// (.dependency-cruiser.cjs); both run in `npm run lint`.
import js from "@eslint/js";
import tseslint from "typescript-eslint";

export default tseslint.config(
  { ignores: ["dist/**", "data/**", "node_modules/**", "test-results/**"] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      // TypeScript already refuses undefined names, and knows the DOM and Node types apart.
      "no-undef": "off",
      // File names and headers are cleaned of control characters on purpose.
      "no-control-regex": "off",
      "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_", varsIgnorePattern: "^_", destructuredArrayIgnorePattern: "^_" }],
    },
  },
  {
    // Issue 31: NeDB only through its public API. Its private fields and methods, reached
    // through nedb-promises' proxy, are refused here; private modules by dependency-cruiser.
    files: ["src/**"],
    rules: {
      "no-restricted-syntax": [
        "error",
        {
          selector:
            "MemberExpression[property.name=/^(__original|executor|persistence|_resetIndexes|_updateIndexes|_insertMultipleDocsInCache|_insertInCache|_removeFromIndexes|_getCandidates|indexes)$/]",
          message: "NeDB's internals: use its public API (issue 31, src/store/embedded-collections.ts).",
        },
        {
          selector: "Literal[value='__original']",
          message: "NeDB's internals: use its public API (issue 31, src/store/embedded-collections.ts).",
        },
      ],
    },
  },
  {
    // Tests read loosely typed JSON answers; `any` there is the honest type.
    files: ["**/*.test.ts", "test/**", "bench/**"],
    rules: { "@typescript-eslint/no-explicit-any": "off" },
  },
);
