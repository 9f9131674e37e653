/**
 * The app's own events on the bus, each with the arguments the app sends (docs/scripting.md
 * lists them for script writers). The app's listeners and triggers are typed by this map
 * through `AppBus` (bus.ts); `window.Backbone`, the same bus as user scripts see it, stays
 * untyped, since a script may trigger any name with any arguments. Key events take
 * optional arguments for that reason: a script triggers `key:copy` with none.
 */
import type { Collaborator, Tree, UserView } from "../shared/records.js";
import type { ChangeKind, ChangeRecord } from "./controller/changes.js";
import type { RemoteChange } from "./live/follow.js";

export type { RemoteChange };
import type { Preferences } from "./preferences.js";
import type { Route } from "./router.js";

/** A dialog's callback: null when the action succeeded, else a sentence to show. */
export type Done = (problem: string | null) => void;

export interface Credentials {
  email: string;
  password: string;
}

export type MoveWhere = "before" | "after" | "child";

/** `cards:import`: a seed to import under `parentId` (SPEC §7), from the dialog or a paste. */
export interface ImportRequest {
  parentId: string | null;
  seed: string;
  /** Index among the parent's children for the new top cards; the end when absent. */
  at?: number;
  kind?: Extract<ChangeKind, "import" | "paste">;
  done?: Done;
}

type KeyEvents = {
  [K in
    | "up"
    | "down"
    | "left"
    | "right"
    | "first"
    | "last"
    | "pageUp"
    | "pageDown"
    | "edit"
    | "save"
    | "cancel"
    | "bold"
    | "italic"
    | "addDown"
    | "addUp"
    | "addRight"
    | "delete"
    | "moveUp"
    | "moveDown"
    | "moveLeft"
    | "moveRight"
    | "moveUpFive"
    | "moveDownFive"
    | "moveToTop"
    | "moveToBottom"
    | "fullscreen"
    | "editFullscreen"
    | "split:down"
    | "split:up"
    | "split:right"
    | "merge:down"
    | "merge:up"
    | "search"
    | "clearSearch"
    | "wordcount"
    | "undo"
    | "redo" as `key:${K}`]: [];
} & {
  "key:copy": [data?: DataTransfer | null];
  "key:cut": [data?: DataTransfer | null];
  "key:paste": [text?: string | null];
  "key:paste:child": [text?: string | null];
};

type ModalEvents = {
  [K in "help" | "appearance" | "new-tree" | "import" | "export" | "history" | "switcher" as `modal:show:${K}`]: [];
} & {
  [K in "rename-tree" | "collaborators" | "publish" | "delete-tree" as `modal:show:${K}`]: [treeId: string];
};

export type AppEvents = KeyEvents &
  ModalEvents & {
    route: [route: Route];
    "ui:navigate": [path: string];
    "ui:logout": [];
    "ui:login": [credentials: Credentials];
    "ui:signup": [credentials: Credentials];
    "ui:select": [cardId: string];
    "ui:edit": [cardId: string];
    "ui:task": [cardId: string, index: number, checked: boolean];
    "ui:move": [move: { id: string; targetId: string; where: MoveWhere }];

    "user:login": [user: UserView];
    "user:logout": [];
    "user:changed": [user: UserView | null];
    "preferences:change": [preferences: Preferences];

    "card:activate": [cardId: string];
    "card:deactivate": [cardId: string];
    "card:edit": [cardId: string];
    "card:save": [cardId: string, text: string];
    "card:cancel": [cardId: string];
    /** The open editor went into or out of full screen (its card is `.fullscreen-container`). */
    "card:fullscreen": [cardId: string, on: boolean];
    "card:add": [cardId: string];
    "card:id": [oldId: string, newId: string];
    "card:move": [cardId: string];
    "card:delete": [cardId: string, removedIds: string[]];
    "card:split": [cardId: string, continuedId: string];
    "card:merge": [keptId: string, removedId: string];
    "cards:import": [request: ImportRequest];
    "cards:imported": [cardIds: string[]];
    "search:results": [query: string, cardIds: string[]];
    "export:download": [href: string];

    /**
     * A collaborator's change, applied to the open tree (the live stream's `data`, SPEC §10);
     * shared by the live updates, which send it, and the history panel, which refreshes on it.
     */
    "remote:change": [change: RemoteChange];

    "tree:load": [treeId: string];
    "tree:change": [change: ChangeRecord];
    "tree:changed": [tree: Tree];
    "tree:created": [tree: Tree];
    "tree:deleted": [treeId: string];
    "tree:left": [treeId: string];

    "trees:create": [request: { name: string; seed?: string; done?: Done }];
    /** Files dropped on the trees list: a new tree from each (views/file-drop.ts). */
    "trees:import-files": [files: File[]];
    "trees:rename": [request: { treeId: string; name: string; done?: Done }];
    /** The tree settings dialog: name and `latex`, whichever changed. */
    "trees:update": [request: { treeId: string; changes: { name?: string; latex?: boolean }; done?: Done }];
    "trees:copy": [request: { treeId: string }];
    "trees:clone-public": [request: { publicUrl: string }];
    "trees:delete": [request: { treeId: string }];
    "trees:favorite": [request: { treeId: string; favorite: boolean }];
    "trees:publish": [request: { treeId: string; publicUrl: string | null; done?: Done }];
    "collaborators:add": [request: { treeId: string; email: string; done?: Done }];
    "collaborators:remove": [request: { treeId: string; userId: string; done?: Done }];
    "collaborators:changed": [treeId: string, added?: Collaborator];
  };

export type EventName = keyof AppEvents;

/** Events sent without arguments: what a key, a touch button or a menu entry triggers. */
export type ActionEvent = { [K in EventName]: [] extends AppEvents[K] ? K : never }[EventName];
