export interface ToolGroup {
  name: "browser" | "office" | "proxy";
  what: string;
  files: string[];
  packages: string[];
  optOut: string;
  /** The `describe` wrapper that test files of this group use; the runner finds them by it. */
  marker: string;
}
export type SuiteDecision = { action: "run" } | { action: "skip" } | { action: "fail"; message: string };
export const TOOL_GROUPS: readonly ToolGroup[];
export function isLeftOut(group: ToolGroup, env?: NodeJS.ProcessEnv): boolean;
export function missingFiles(group: ToolGroup, exists?: (file: string) => boolean, env?: NodeJS.ProcessEnv): string[];
export function suiteDecision(groupName: ToolGroup["name"], env?: NodeJS.ProcessEnv, exists?: (file: string) => boolean): SuiteDecision;
export function installCommand(packages: string[], asRoot: boolean): string;
