/**
 * Built-in templates for a new tree (issue 30): each is Markdown the new-tree dialog puts in
 * its "Start from" text, where the writer sees it and may change it before creating the
 * tree; headings become cards nested by level, as any import.
 */
export interface Template {
  id: string;
  label: string;
  name: string;
  seed: string;
}

export const TEMPLATES: readonly Template[] = [
  {
    id: "novel",
    label: "Novel: acts, chapters, scenes",
    name: "Novel",
    seed: [
      "# Act I: setup", "Who wants what, and what stands in the way.",
      "## Chapter 1", "### Scene: opening image", "Where, who, what they want.", "### Scene: the call", "What disturbs the everyday.",
      "# Act II: confrontation", "The stakes rise.",
      "## Chapter 2", "### Scene: midpoint", "A turn that changes the goal.",
      "# Act III: resolution", "How it ends, and what it costs.",
      "## Chapter 3", "### Scene: climax", "### Scene: final image",
    ].join("\n\n"),
  },
  {
    id: "essay",
    label: "Essay: thesis, arguments, conclusion",
    name: "Essay",
    seed: [
      "# Thesis", "One sentence the essay proves.",
      "# Argument one", "## Evidence", "## Objection and answer",
      "# Argument two", "## Evidence", "## Objection and answer",
      "# Conclusion", "What follows, and why it matters.",
    ].join("\n\n"),
  },
  {
    id: "meeting",
    label: "Meeting notes: agenda, decisions, actions",
    name: "Meeting notes",
    seed: ["# Agenda", "## Topic one", "## Topic two", "# Decisions", "- ", "# Actions", "- [ ] Who does what, by when"].join("\n\n"),
  },
  {
    id: "research",
    label: "Research: question, sources, findings",
    name: "Research notes",
    seed: ["# Question", "What do I want to know?", "# Sources", "## Source one", "Quote, page, and what it says to the question.", "# Findings", "# Open questions"].join("\n\n"),
  },
];
