// Vite's `?raw` imports: a file's text as a string (the "How to play" text).
declare module "*?raw" {
  const text: string;
  export default text;
}
