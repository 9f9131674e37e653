/**
 * Limits on the GraphQL document itself, checked before anything runs; each refusal is
 * `invalid_request`, answered like any other malformed document (docs/graphql.md, "Limits"):
 * - tokens: graphql-js's own parser option `maxTokens`. The parser recurses once per
 *   nesting level and overflowed the stack at about 2,000 levels (a RangeError, logged
 *   with its stack as `internal`); a document is refused once its tokens pass the limit,
 *   long before its nesting can be that deep.
 * - aliases and directives: graphql-armor's validation rules, reporting as validation
 *   errors rather than throwing (which would abort validation as a "Syntax Error").
 *
 * Introspection is bounded by graphql-js's own MaxIntrospectionDepthRule (one of its
 * specified rules): the operation's depth and cost (operation-limits.ts) count `__schema`
 * as one field. Each rule here depends on the document alone, so yoga's validation cache
 * may keep its verdict per document.
 */
import { maxAliasesRule } from "@escape.tech/graphql-armor-max-aliases";
import { maxDirectivesRule } from "@escape.tech/graphql-armor-max-directives";
import { GraphQLError, parse, type ValidationContext } from "graphql";
import type { Plugin } from "graphql-yoga";
import type { GraphQLLimits } from "../config.js";

/** Armor's rules throw "Syntax Error: ..." by default; this reports their message as a validation error. */
function reportInstead(context: ValidationContext | null, error: GraphQLError): void {
  context?.reportError(new GraphQLError(error.message.replace(/^Syntax Error: /, "")));
}

/** graphql-js's parse with `maxTokens`, its refusal in plainer words. */
function parseWithin(maxTokens: number): typeof parse {
  return (source, options) => {
    try {
      return parse(source, { ...options, maxTokens });
    } catch (error) {
      if (error instanceof GraphQLError && /contains more tha[nt] \d+ tokens/.test(error.message)) {
        throw new GraphQLError(
          `Token limit of ${maxTokens} exceeded: this document has more names, values and punctuation marks than that.`,
        );
      }
      throw error;
    }
  };
}

/** The yoga plugin: the parser's token limit and armor's rules. */
export function documentLimits(limits: GraphQLLimits): Plugin {
  const armor = { exposeLimits: true, propagateOnRejection: false, onReject: [reportInstead] };
  const aliases = maxAliasesRule({ ...armor, n: limits.aliases });
  const directives = maxDirectivesRule({ ...armor, n: limits.directives });
  return {
    onParse: ({ setParseFn }) => {
      setParseFn(parseWithin(limits.tokens));
    },
    onValidate: ({ addValidationRule }) => {
      addValidationRule(aliases);
      addValidationRule(directives);
    },
  };
}
