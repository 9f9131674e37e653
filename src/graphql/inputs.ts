/**
 * Input types of the mutations. Each is checked by the validation plugin with the input
 * schema of the domain command the mutation runs (src/domain/command.ts), the one REST
 * parses its body with, so both surfaces accept and refuse the same things and report the
 * same messages, and a resolver hands the parsed input to the command as it is (a
 * creation's client-chosen `id` is renamed to the command's `_id` on the way: `createCardGraphqlInput`).
 */
import { commands } from "../domain/commands.js";
import { createCardGraphqlInput, createTreeGraphqlInput } from "../shared/schemas.js";
import { builder } from "./builder.js";

export const CreateCardInput = builder.inputType("CreateCardInput", {
  fields: (t) => ({
    id: t.id({ description: "The new card's id, chosen by the client (24 characters of a-z and 0-9); a taken id is `conflict`. Left out: the server chooses." }),
    treeId: t.id({ required: true }),
    position: t.float({ required: true, description: "Among the siblings; fractions are fine (1.5 is between 1 and 2)." }),
    content: t.string({ description: 'Markdown; "" when left out.' }),
    parentId: t.id({ description: "null or left out: the first column." }),
  }),
  validate: createCardGraphqlInput,
});

export const UpdateCardInput = builder.inputType("UpdateCardInput", {
  description: "Only the fields given change.",
  fields: (t) => ({
    content: t.string(),
    position: t.float(),
    parentId: t.id({ description: "null moves the card to the first column." }),
  }),
  validate: commands.updateCard.input,
});

export const SeedInput = builder.inputType("SeedInput", {
  fields: (t) => ({
    parentId: t.id({ description: "Where the new cards go, after the existing children; null: the first column." }),
    seed: t.string({ required: true, description: "Markdown (each heading starts a card), JSON in the json export's shape, OPML 2.0, or a Gingko Writer (.gkw) file." }),
  }),
  validate: commands.importSeed.input,
});

export const CreateTreeInput = builder.inputType("CreateTreeInput", {
  fields: (t) => ({
    id: t.id({ description: "The new tree's id, chosen by the client (24 characters of a-z and 0-9); a taken id is `conflict`. Left out: the server chooses." }),
    name: t.string({ required: true }),
    seed: t.string({ description: "Cards to start with; without it, one empty card." }),
  }),
  validate: createTreeGraphqlInput,
});

export const UpdateTreeInput = builder.inputType("UpdateTreeInput", {
  description: "Only the fields given change. Setting publicUrl is the owner's alone.",
  fields: (t) => ({
    name: t.string(),
    latex: t.boolean(),
    publicUrl: t.string({ description: "3–64 characters of a-z, 0-9 and -; null makes the tree private again." }),
  }),
  validate: commands.updateTree.input,
});

export const AddCollaboratorInput = builder.inputType("AddCollaboratorInput", {
  fields: (t) => ({
    email: t.string({ required: true, description: "Of an existing user." }),
  }),
  validate: commands.addCollaborator.input,
});
