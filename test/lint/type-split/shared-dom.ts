// The kernel reaching for the browser's globals: must not compile.
export const title: string = document.title;
