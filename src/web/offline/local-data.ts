/**
 * The small things the app keeps in localStorage per tree (the active card, an editor's
 * draft, the card clipboard) and per user (the words the server refused, unsaved-words.ts):
 * removed at log-out with the user's IndexedDB database, so the next person on this browser
 * finds nothing of theirs (SPEC §13). The log-out asks first while any of these are kept.
 */
const PER_USER = /^cardtree:(draft|active|unsaved|clipboard)/;

export function forgetLocalData(): void {
  try {
    const keys: string[] = [];
    for (let i = 0; i < localStorage.length; i++) {
      const key = localStorage.key(i);
      if (key && PER_USER.test(key)) keys.push(key);
    }
    for (const key of keys) localStorage.removeItem(key);
  } catch {
    // Storage disabled: nothing kept.
  }
}
